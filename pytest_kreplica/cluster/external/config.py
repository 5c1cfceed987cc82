"""The YAML of ``--kreplica-cluster FILE``: a cluster someone else started, and how to hurt it.

Read strictly (a key given twice, an unknown key, a wrong type: one line naming the file, the
key and the allowed values) because a typo in a fault command would otherwise surface as a
case that "passed" without any fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...yaml_strict import DuplicateKey, unique_key_loader
from ..capabilities import Capabilities

# fault adapter entry -> the failure value it enables
FAULTS = {"kill": "hard", "terminate": "clean", "pause": "soft"}
FAILURE_FAULT = {failure: fault for fault, failure in FAULTS.items()}
PLACEHOLDERS = ("node", "pid", "container", "host", "port")
TOP_KEYS = ("kafka_version", "nodes", "faults", "capabilities", "command_timeout", "start_timeout")
NODE_KEYS = ("id", "host", "port", "pid", "pid_command", "container", "log_dir", "log_file")
FAULT_KEYS = ("strike", "restore")
CAPABILITY_KEYS = ("failures", "controller", "transactions")


@dataclass(frozen=True)
class ExternalNode:
    node_id: int
    host: str
    port: int
    pid: int | None = None
    pid_command: str | None = None  # prints the node's current pid (a restart changes it)
    container: str | None = None
    log_dir: Path | None = None
    log_file: Path | None = None


@dataclass(frozen=True)
class FaultCommands:
    strike: str
    restore: str


@dataclass(frozen=True)
class ExternalConfig:
    path: Path
    nodes: tuple[ExternalNode, ...]
    faults: dict[str, FaultCommands]  # "kill" | "terminate" | "pause" -> commands
    failures: tuple[str, ...]  # the matrix failure values this cluster offers
    controller: bool  # whether the KRaft controller can be found (DescribeQuorum)
    kafka_version: str = "4.0.0"  # its major picks how topic configs are spelt
    transactions: bool = True  # whether transactional producers work (checked at start)
    command_timeout: float = 60.0
    start_timeout: float = 60.0

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.host}:{n.port}" for n in self.nodes)

    @property
    def capabilities(self) -> Capabilities:
        """What the file offers, for deselecting the cases it cannot run."""
        return Capabilities(failures=self.failures, brokers=(len(self.nodes),),
                            controller=self.controller, transactions=self.transactions,
                            kafka_version=self.kafka_version, where=str(self.path),
                            replica_logs=all(n.log_dir is not None for n in self.nodes))

    def lacks(self, failure: str, target: str, brokers: int) -> str | None:
        """Why a case with these values cannot run here (None: it can)."""
        from types import SimpleNamespace

        return self.capabilities.lacks(SimpleNamespace(failure=failure, target=target,
                                                       brokers=brokers))


def _bad(path: Path, key: str, allowed: str, seen: Any = None) -> InputError:
    got = "" if seen is None else f", got {seen!r}"
    return InputError(f"{path}: bad {key}: expected {allowed}{got}")


def _mapping(path: Path, key: str, value: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(path, key, f"a mapping with keys {', '.join(allowed)}", value)
    for k in value:
        if k not in allowed:
            raise _bad(path, f"{key}.{k}" if key else str(k), f"one of the keys "
                       f"{', '.join(allowed)}", k)
    return value


def _template(path: Path, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _bad(path, key, "a shell command (placeholders {" + "}, {".join(PLACEHOLDERS)
                   + "})", value)
    import string

    for _, field, _, _ in string.Formatter().parse(value):
        if field is not None and field not in PLACEHOLDERS:
            raise _bad(path, key, "placeholders among {" + "}, {".join(PLACEHOLDERS) + "}",
                       "{" + field + "}")
    return value


def _node(path: Path, i: int, raw: Any) -> ExternalNode:
    key = f"nodes[{i}]"
    raw = _mapping(path, key, raw, NODE_KEYS)
    for need in ("id", "host", "port"):
        if need not in raw:
            raise _bad(path, f"{key}.{need}", "a value (id, host and port are required)")
    if not isinstance(raw["id"], int) or isinstance(raw["id"], bool):
        raise _bad(path, f"{key}.id", "an integer node id", raw["id"])
    if not isinstance(raw["port"], int) or not 0 < raw["port"] < 65536:
        raise _bad(path, f"{key}.port", "a port number 1-65535", raw["port"])
    if not isinstance(raw["host"], str) or not raw["host"]:
        raise _bad(path, f"{key}.host", "a host name or address", raw["host"])
    pid = raw.get("pid")
    if pid is not None and (not isinstance(pid, int) or pid < 1):
        raise _bad(path, f"{key}.pid", "a process id (positive integer)", pid)
    pid_command = raw.get("pid_command")
    if pid_command is not None:
        pid_command = _template(path, f"{key}.pid_command", pid_command)
    paths = {}
    for name in ("log_dir", "log_file"):
        if raw.get(name) is not None:
            if not isinstance(raw[name], str):
                raise _bad(path, f"{key}.{name}", "a path", raw[name])
            paths[name] = (path.parent / Path(raw[name]).expanduser())
    container = raw.get("container")
    if container is not None and not isinstance(container, str):
        raise _bad(path, f"{key}.container", "a container name", container)
    return ExternalNode(raw["id"], raw["host"], raw["port"], pid, pid_command, container,
                        paths.get("log_dir"), paths.get("log_file"))


def parse(path: Path, data: Any) -> ExternalConfig:
    """Validate the loaded YAML ``data`` of ``path``."""
    data = _mapping(path, "", data, TOP_KEYS)
    nodes_raw = data.get("nodes")
    if not isinstance(nodes_raw, list) or not nodes_raw:
        raise _bad(path, "nodes", "a non-empty list of {id, host, port, ...}", nodes_raw)
    nodes = tuple(_node(path, i, raw) for i, raw in enumerate(nodes_raw))
    ids = [n.node_id for n in nodes]
    if len(set(ids)) != len(ids):
        raise _bad(path, "nodes[].id", "distinct node ids", ids)
    faults_raw = _mapping(path, "faults", data.get("faults") or {}, tuple(FAULTS))
    faults = {}
    for name, raw in faults_raw.items():
        raw = _mapping(path, f"faults.{name}", raw, FAULT_KEYS)
        for part in FAULT_KEYS:
            if part not in raw:
                raise _bad(path, f"faults.{name}.{part}", "a shell command (strike and "
                           "restore are both required)")
        faults[name] = FaultCommands(_template(path, f"faults.{name}.strike", raw["strike"]),
                                     _template(path, f"faults.{name}.restore", raw["restore"]))
    caps = _mapping(path, "capabilities", data.get("capabilities") or {}, CAPABILITY_KEYS)
    failures = caps.get("failures", [FAULTS[f] for f in faults])
    if not isinstance(failures, list):
        raise _bad(path, "capabilities.failures", f"a list of {', '.join(FAILURE_FAULT)}",
                   failures)
    for failure in failures:
        if failure not in FAILURE_FAULT:
            raise _bad(path, "capabilities.failures", f"values among "
                       f"{', '.join(FAILURE_FAULT)}", failure)
        if FAILURE_FAULT[failure] not in faults:
            raise _bad(path, "capabilities.failures", f"failures whose fault is declared "
                       f"(failure {failure} needs faults.{FAILURE_FAULT[failure]})", failure)
    flags = {}
    for name in ("controller", "transactions"):
        flags[name] = caps.get(name, True)
        if not isinstance(flags[name], bool):
            raise _bad(path, f"capabilities.{name}", "true or false", flags[name])
    extra = {"transactions": flags["transactions"]}
    if "kafka_version" in data:
        version = str(data["kafka_version"])
        if not version.split(".")[0].isdigit():
            raise _bad(path, "kafka_version", "a version x.y.z", data["kafka_version"])
        extra["kafka_version"] = version
    for name in ("command_timeout", "start_timeout"):
        if name in data:
            value = data[name]
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise _bad(path, name, "a positive number of seconds", value)
            extra[name] = float(value)
    return ExternalConfig(path, nodes, faults, tuple(failures), flags["controller"], **extra)


def load(path: Path | str) -> ExternalConfig:
    """Read and validate the cluster file; any problem is one ``InputError`` line."""
    import yaml

    path = Path(path).expanduser().resolve()
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the cluster file: {exc.strerror}") from None
    try:
        data = yaml.load(text, Loader=unique_key_loader())  # noqa: S506 - a SafeLoader
    except DuplicateKey as exc:
        raise InputError(f"{path}: key {exc.key!r} given twice (line {exc.line}); "
                         "expected each key once") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise InputError(f"{path}: not valid YAML{where}: "
                         f"{getattr(exc, 'problem', exc)}") from None
    return parse(path, data)

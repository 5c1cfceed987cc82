"""A fault proxy in front of every node's inter-broker and controller listeners.

``tc netem`` needs a kernel module this machine kind lacks and iptables needs root, so a
degraded link is made in user space: Shopify's Toxiproxy (a maintained Go TCP proxy with
latency/jitter, bandwidth, timeout and reset toxics, driven over HTTP) listens on one port
per node and listener, and the nodes advertise those ports instead of their own. Clients keep
talking to the nodes directly (their own ``PLAINTEXT`` listener), so a link fault is between
the nodes only: replication (``REPLICATION`` listener) and the KRaft quorum (the voters'
addresses).

Toxiproxy is built once per machine with ``go install`` into the kreplica cache (``once``),
runs in its own process group with the parent-death signal (``launcher``), is
marked in its environment so a later session reaps one whose owner died, and is killed when
its cluster closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from .... import once
from ....errors import ClusterError, EnvironmentProblem
from ....waits import last_error_line, wait_for
from ... import ports as kports
from ...kafka.config import NodeAddress
from ...kafka.distribution import cache_dir
from ...launcher import Launcher
from ...reaper import owner_alive, owner_token

TOXIPROXY_VERSION = "v2.12.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
GO_BUILD_TIMEOUT_S = 900.0
START_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 5.0
OWNER_ENV = "KREPLICA_PROXY_OWNER"  # owner token (reaper.owner_token) of a Toxiproxy server
REPLICATION = "REPLICATION"  # the inter-broker listener that goes through the proxy


def binary_path() -> Path:
    return cache_dir() / "toxiproxy" / TOXIPROXY_VERSION / "toxiproxy-server"


def ensure_toxiproxy() -> Path:
    """The Toxiproxy server binary, built once per machine with ``go install`` (pinned)."""
    path = binary_path()
    once.prepare(f"building Toxiproxy {TOXIPROXY_VERSION} with go install (once, for the "
                 "link faults)", path.parent.parent / f"{TOXIPROXY_VERSION}.lock", path.exists,
                 lambda: _go_install(path))
    return path


def _go_install(target: Path) -> None:
    go = shutil.which("go")
    if go is None:
        raise EnvironmentProblem(
            "the link faults (slow_link, lossy_link, flaky_link, one_way_partition) need Go "
            ">= 1.22 once, to build Toxiproxy: install it (Debian: apt-get install golang-go; "
            "or https://go.dev/dl/) and put 'go' on PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gobin-", dir=target.parent) as gobin:
        log_path = target.parent / "go-install.log"
        with open(log_path, "wb") as log:
            code = subprocess.call([go, "install", f"{TOXIPROXY_MODULE}@{TOXIPROXY_VERSION}"],
                                   env={**os.environ, "GOBIN": gobin, "GOFLAGS": "-mod=mod",
                                        "CGO_ENABLED": "0"},
                                   stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, timeout=GO_BUILD_TIMEOUT_S)
        built = Path(gobin) / "server"
        if code != 0 or not built.exists():
            raise EnvironmentProblem(
                f"go install {TOXIPROXY_MODULE}@{TOXIPROXY_VERSION} failed (exit {code}, "
                f"expected 0): {last_error_line(log_path)}; log: {log_path}")
        built.replace(target)


def reap_orphan_proxies() -> list[int]:
    """Kill Toxiproxy servers whose owning session died (parent-death signal missed)."""
    orphans = []
    for proc in psutil.process_iter(["name"]):
        if proc.info.get("name") != "toxiproxy-server":
            continue
        with contextlib.suppress(psutil.Error):
            token = proc.environ().get(OWNER_ENV)
            if token and not owner_alive(token):
                proc.kill()
                orphans.append(proc)
    psutil.wait_procs(orphans, timeout=5)
    return [p.pid for p in orphans]


def _popen(cmd: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log_path, "ab") as out:
        return Launcher.get().popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env)


def start_for(workdir: Path, host: str, addresses: list[NodeAddress]) -> LinkProxy:
    """The started proxy of a cluster whose nodes listen at ``addresses``; its routes and
    pid are written to ``<workdir>/links.json`` for people reading a run."""
    proxy = LinkProxy.plan(workdir, host, {a.node_id: a.controller_port for a in addresses})
    proxy.start()
    (proxy.workdir / "links.json").write_text(json.dumps(proxy.describe(), indent=2))
    return proxy


@dataclass
class Route:
    """One proxied listener: ``listen`` (what peers are told) forwards to ``upstream``."""

    name: str
    node_id: int
    listener: str  # "replication" | "controller"
    listen: int
    upstream: int


@dataclass
class LinkProxy:
    """The Toxiproxy server of one cluster and its routes (two per node)."""

    workdir: Path
    host: str
    admin_port: int
    routes: dict[str, Route] = field(default_factory=dict)
    replication_ports: dict[int, int] = field(default_factory=dict)  # node -> own listener
    proc: subprocess.Popen | None = None
    ports: list[int] = field(default_factory=list)
    # where the routes listen and the nodes are told to connect; ``host`` (the admin API and
    # the upstreams) unless the nodes are elsewhere: containers reach the host at their
    # network's gateway
    listen_host: str | None = None

    @property
    def listen_at(self) -> str:
        return self.listen_host or self.host

    @classmethod
    def plan(cls, workdir: Path, host: str, controller_ports: dict[int, int],
             listen_host: str | None = None) -> LinkProxy:
        """Claim the ports: per node its replication listener and two proxy ports, plus the
        admin port (claimed like the cluster's, so concurrent sessions never collide)."""
        nodes = sorted(controller_ports)
        claimed = kports.claim_ports(3 * len(nodes) + 1, host)
        proxy = cls(Path(workdir), host, claimed[-1], ports=claimed, listen_host=listen_host)
        for i, node in enumerate(nodes):
            own, via_repl, via_ctrl = claimed[3 * i:3 * i + 3]
            proxy.replication_ports[node] = own
            proxy.routes[f"n{node}-replication"] = Route(f"n{node}-replication", node,
                                                         "replication", via_repl, own)
            proxy.routes[f"n{node}-controller"] = Route(f"n{node}-controller", node,
                                                        "controller", via_ctrl,
                                                        controller_ports[node])
        return proxy

    # -- what the nodes are told ------------------------------------------------------------
    def voters(self) -> str:
        """``controller.quorum.voters`` naming every node's proxied controller port."""
        return ",".join(f"{r.node_id}@{self.listen_at}:{r.listen}" for r in
                        sorted(self.routes.values(), key=lambda r: r.node_id)
                        if r.listener == "controller")

    def node_properties(self, node_id: int, props: dict[str, str],
                        bind: str | None = None) -> dict[str, str]:
        """``props`` with a ``REPLICATION`` listener of the node's own (at ``bind``, by
        default the route's upstream), advertised at its proxy port and used between
        brokers; clients keep ``PLAINTEXT``."""
        route = self.routes[f"n{node_id}-replication"]
        out = dict(props)
        out["listeners"] += f",{REPLICATION}://{bind or f'{self.host}:{route.upstream}'}"
        out["advertised.listeners"] += f",{REPLICATION}://{self.listen_at}:{route.listen}"
        out["inter.broker.listener.name"] = REPLICATION
        out["listener.security.protocol.map"] += f",{REPLICATION}:PLAINTEXT"
        return out

    def describe(self) -> dict[str, Any]:
        """For run.json: the proxy and where each route leads."""
        return {"proxy": f"Toxiproxy {TOXIPROXY_VERSION}", "pid": self.pid,
                "admin": f"{self.host}:{self.admin_port}",
                "routes": {r.name: f"{self.listen_at}:{r.listen} -> {self.host}:{r.upstream}"
                           for r in self.routes.values()}}

    def node_routes(self, node_id: int) -> list[Route]:
        return [r for r in self.routes.values() if r.node_id == node_id]

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def log_file(self) -> Path:
        return self.workdir / "toxiproxy.log"

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        """Start the server and create every route; raises ``ClusterError`` naming its log."""
        reap_orphan_proxies()
        binary = ensure_toxiproxy()
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, OWNER_ENV: owner_token()}
        self.proc = _popen([str(binary), "-host", self.host, "-port", str(self.admin_port)],
                           self.log_file, env)

        def up() -> str | None:
            if self.proc is not None and self.proc.poll() is not None:
                raise ClusterError(f"Toxiproxy exited with code {self.proc.returncode} "
                                   f"(expected: running): {last_error_line(self.log_file)}; "
                                   f"log: {self.log_file}")
            self.api("GET", "/version")
            return None
        try:
            wait_for(up, timeout, f"Toxiproxy answering on {self.host}:{self.admin_port}",
                     f"log: {self.log_file}")
            for route in self.routes.values():
                self.api("POST", "/proxies", {"name": route.name, "enabled": True,
                                              "listen": f"{self.listen_at}:{route.listen}",
                                              "upstream": f"{self.host}:{route.upstream}"})
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Kill the server's process group (it holds no state) and release the ports."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        kports.release_ports(self.ports)
        self.ports = []

    # -- the toxics -------------------------------------------------------------------------------
    def api(self, method: str, path: str, body: Any = None) -> Any:
        """One call of Toxiproxy's HTTP API; its errors become ``ClusterError``."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://{self.host}:{self.admin_port}{path}", data=data,
                                     method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as exc:
            raise ClusterError(f"Toxiproxy {method} {path} answered {exc.code} (expected "
                               f"2xx): {exc.read().decode(errors='replace')[:200]}; log: "
                               f"{self.log_file}") from None
        except OSError as exc:
            raise ClusterError(f"Toxiproxy {method} {path} failed: {exc}; log: "
                               f"{self.log_file}") from None
        return json.loads(text) if text.strip() else None

    def add_toxic(self, route: str, name: str, kind: str, stream: str,
                  toxicity: float = 1.0, **attributes: int) -> None:
        self.api("POST", f"/proxies/{route}/toxics",
                 {"name": name, "type": kind, "stream": stream, "toxicity": toxicity,
                  "attributes": attributes})

    def toxics(self, route: str) -> list[dict[str, Any]]:
        return self.api("GET", f"/proxies/{route}/toxics") or []

    def clear(self, route: str, *, drop_connections: bool = False) -> None:
        """Remove every toxic of ``route``; with ``drop_connections`` also close the
        connections it carries (a black hole dropped bytes mid-stream: those connections
        are corrupt and must be reopened by their clients)."""
        for toxic in self.toxics(route):
            self.api("DELETE", f"/proxies/{route}/toxics/{toxic['name']}")
        if drop_connections:
            self.api("POST", f"/proxies/{route}", {"enabled": False})
            self.api("POST", f"/proxies/{route}", {"enabled": True})

"""The plugin's options: one help constant per option, shared by ``addoption`` and ``addini``,
resolved once into a frozen ``KreplicaOptions`` with precedence CLI > ini > env > default
(compared with ``is not None``: an empty string or ``false`` is a real value)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..cluster import backend_names
from ..matrix import DIMENSIONS, InvalidValue
from .repeat import repeat_count

HELP_MATRIX = ("matrix to run: a name (the project's matrices directory, then the shipped "
               "matrices) or a path to a YAML file (repeatable; default: every matrix of "
               "kreplica_matrices_dir if it exists, else every shipped matrix)")
HELP_MATRICES_DIR = ("the project's directory of matrix YAML files, relative to rootdir; its "
                     "names add to the shipped matrices and override one of the same name "
                     "(default: matrices, if it exists)")
HELP_OUTPUT = ("directory for the cases' run directories, one sub-directory per case "
               "(default: under pytest's basetemp; env KREPLICA_OUTPUT)")
HELP_KAFKA_VERSION = ("Kafka version x.y.z for cases whose matrix does not set one "
                      "(default: the newest 4.x with every artifact published; "
                      "env KREPLICA_KAFKA_VERSION)")
HELP_BACKEND = (f"cluster backend: {' | '.join(backend_names())} "
                "(default: process; env KREPLICA_BACKEND)")
HELP_SPARK_MASTER = ("Spark for the validation: local[N] (default local[2], in-process), "
                     "connect (this machine's shared Spark Connect server, started on first "
                     "use), auto (that server if it runs, else local[2]), sc://host:port "
                     "(a Spark Connect server), spark://host:port (a standalone cluster); "
                     "env KREPLICA_SPARK_MASTER")
HELP_RESULTS = ("the results store (SQLite) every case run appends a row to (default: "
                "results.sqlite beside the output directory; empty: none; env "
                "KREPLICA_RESULTS)")
HELP_NO_REPLICA_CHECK = ("skip comparing the replicas' logs after each case "
                         "(env KREPLICA_NO_REPLICA_CHECK=1)")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("kreplica", "Kafka replication matrices (pytest-kreplica)")
    group.addoption("--kreplica-matrix", action="append", default=None, metavar="NAME|PATH",
                    help=HELP_MATRIX)
    group.addoption("--kreplica-output", default=None, metavar="DIR", help=HELP_OUTPUT)
    group.addoption("--kreplica-kafka-version", default=None, metavar="X.Y.Z",
                    help=HELP_KAFKA_VERSION)
    group.addoption("--kreplica-backend", default=None, metavar="NAME", help=HELP_BACKEND)
    group.addoption("--kreplica-spark-master", default=None, metavar="URL",
                    help=HELP_SPARK_MASTER)
    group.addoption("--kreplica-results", default=None, metavar="PATH", help=HELP_RESULTS)
    group.addoption("--kreplica-no-replica-check", action="store_true", default=None,
                    help=HELP_NO_REPLICA_CHECK)
    parser.addini("kreplica_matrices_dir", HELP_MATRICES_DIR, default=None)
    # default=None: getini returns None when the ini file does not set the key
    parser.addini("kreplica_output", HELP_OUTPUT, default=None)
    parser.addini("kreplica_kafka_version", HELP_KAFKA_VERSION, default=None)
    parser.addini("kreplica_backend", HELP_BACKEND, default=None)
    parser.addini("kreplica_spark_master", HELP_SPARK_MASTER, default=None)
    parser.addini("kreplica_results", HELP_RESULTS, default=None)
    parser.addini("kreplica_no_replica_check", HELP_NO_REPLICA_CHECK, type="bool",
                  default=None)


@dataclass(frozen=True)
class KreplicaOptions:
    """Every option, resolved once (the ``kreplica_options`` fixture)."""

    matrices: tuple[str, ...]
    matrices_dir: Path
    matrices_dir_required: bool  # set in the ini file: missing is an error, not "shipped"
    output: Path | None
    kafka_version: str | None
    backend: str
    spark_master: str | None
    replica_check: bool
    results: str | None = None  # None: the default store; "": no store
    repeat: int | None = None  # --kreplica-repeat N
    until_fail: bool = False


def _pick(*values: object | None) -> object | None:
    return next((v for v in values if v is not None), None)


def _truthy(text: str | None) -> bool | None:
    if text is None:
        return None
    return text.strip().lower() in ("1", "true", "yes", "on")


def _dimension_value(dimension: str, option: str, value: object | None) -> object | None:
    """Options that set a matrix dimension's default accept exactly its values."""
    if value is None:
        return None
    try:
        return DIMENSIONS[dimension].parse(value)
    except InvalidValue as exc:
        raise pytest.UsageError(f"{option}: bad value {value!r}; allowed: {exc}") from None


def resolve(config: pytest.Config) -> KreplicaOptions:
    """Read every option once; a bad value is a one-line ``pytest.UsageError``."""
    env = os.environ
    root = config.rootpath
    output = _pick(config.getoption("kreplica_output"), config.getini("kreplica_output"),
                   env.get("KREPLICA_OUTPUT"))
    version = _pick(config.getoption("kreplica_kafka_version"),
                    config.getini("kreplica_kafka_version"), env.get("KREPLICA_KAFKA_VERSION"))
    version = _dimension_value("kafka_version", "--kreplica-kafka-version", version)
    external = config.getoption("kreplica_cluster", None) or env.get("KREPLICA_CLUSTER")
    backend = _pick(config.getoption("kreplica_backend"), config.getini("kreplica_backend"),
                    env.get("KREPLICA_BACKEND"), "external" if external else "process")
    if external and backend != "external":
        raise pytest.UsageError(f"--kreplica-cluster runs backend external; got backend "
                                f"{backend!r} (drop --kreplica-backend / KREPLICA_BACKEND)")
    backend = _dimension_value("backend", "--kreplica-backend", backend)
    no_check = _pick(config.getoption("kreplica_no_replica_check"),
                     config.getini("kreplica_no_replica_check"),
                     _truthy(env.get("KREPLICA_NO_REPLICA_CHECK")), False)
    spark = _pick(config.getoption("kreplica_spark_master"),
                  config.getini("kreplica_spark_master"), env.get("KREPLICA_SPARK_MASTER"))
    matrices_dir = config.getini("kreplica_matrices_dir")
    results = _pick(config.getoption("kreplica_results"), config.getini("kreplica_results"),
                    env.get("KREPLICA_RESULTS"))
    return KreplicaOptions(
        matrices=tuple(config.getoption("kreplica_matrix") or ()),
        matrices_dir=root / str(matrices_dir or "matrices"),
        matrices_dir_required=bool(matrices_dir),
        output=None if output in (None, "") else (Path.cwd() / str(output)).resolve(),
        kafka_version=version,
        backend=str(backend),
        spark_master=None if spark in (None, "") else str(spark),
        replica_check=not no_check,
        results=None if results is None else str(results),
        repeat=repeat_count(config),
        until_fail=bool(config.getoption("kreplica_until_fail")),
    )

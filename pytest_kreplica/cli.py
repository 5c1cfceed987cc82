"""The ``kreplica`` command. Each sub-command lives in the module that owns it; this
file only parses arguments and turns our errors, and any other failure to run, into one
line and exit status 2 (1 is kept for "checked and found invalid")."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import KreplicaError
from .history import SEMANTICS
from .validation.engine.spark import AUTO, ENV_MASTER

ENV_TRACEBACK = "KREPLICA_TRACEBACK"
SPARK_MASTER_HELP = ("auto (default: this machine's shared Spark Connect server if one runs, "
                     "else local[2]), local[N], connect (that server, started if none runs: "
                     "a warm one answers a small check in seconds), sc://host:port, "
                     "spark://host:port; env KREPLICA_SPARK_MASTER")
# sub-command -> "module:function"; the function takes the parsed args, returns an exit code
COMMANDS = {
    "check": "pytest_kreplica.validation.checker.cli:run_check",
    "verify-logs": "pytest_kreplica.validation.replicas.cli:run_verify_logs",
    "cluster": "pytest_kreplica.cluster.cli:run_cluster",
    "fetch": "pytest_kreplica.cluster.cli:run_fetch",
    "image": "pytest_kreplica.cluster.docker.image:run_image",
    "report": "pytest_kreplica.report.rebuild:run_report",
    "matrices": "pytest_kreplica.matrix.listing:run_matrices",
    "results": "pytest_kreplica.results.cli:run_results",
    "compare": "pytest_kreplica.results.cli:run_compare",
}
STORE_HELP = "the results store (default: ./results.sqlite, where --kreplica-output DIR's "\
    "run writes it)"
DESCRIPTION = ("Kafka replication system tests: list the matrices, check a run's history, "
               "compare replica logs, start clusters by hand, prepare the cache, rebuild "
               "reports, read the results store.")


def _add(sub: argparse._SubParsersAction, name: str, summary: str) -> argparse.ArgumentParser:
    """A sub-command whose one-line ``summary`` shows in ``kreplica --help`` and its own."""
    return sub.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kreplica", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)

    p = _add(sub, "check", "check a run directory's history for lost, duplicated or "
             "reordered messages (Spark)")
    p.add_argument("run_dir")
    p.add_argument("--semantics", choices=SEMANTICS)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--spark-master", help=SPARK_MASTER_HELP)

    p = _add(sub, "verify-logs", "compare every replica's log in a run directory batch by "
             "batch (Spark)")
    p.add_argument("run_dir")
    p.add_argument("--json", action="store_true")
    p.add_argument("--spark-master", help=SPARK_MASTER_HELP)

    p = _add(sub, "cluster", "start or stop a local Kafka cluster by hand")
    csub = p.add_subparsers(dest="cluster_command", required=True)
    up = _add(csub, "up", "start a cluster and print its bootstrap servers; Ctrl-C stops it")
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--version", dest="kafka_version")
    up.add_argument("--dir", dest="directory")
    up.add_argument("--detach", action="store_true", help="leave it running; stop with down")
    down = _add(csub, "down", "stop a cluster started with --detach")
    down.add_argument("--dir", dest="directory", required=True)

    p = _add(sub, "fetch", "download a Kafka version's jars and build its one-time "
             "artefacts in the cache")
    p.add_argument("--version", dest="kafka_version")

    p = _add(sub, "image", "build Docker images for the docker backend")
    isub = p.add_subparsers(dest="image_command", required=True)
    b = _add(isub, "build", "build (or reuse) the broker image and print its tag")
    b.add_argument("--version", dest="kafka_version")

    p = _add(sub, "report", "rebuild verdict.json and report.html from a run directory "
             "(or all below it)")
    p.add_argument("run_dir")
    p.add_argument("--semantics", choices=SEMANTICS)
    p.add_argument("--spark-master", help=SPARK_MASTER_HELP)

    p = _add(sub, "matrices", "list every matrix a run can name: the shipped ones, the "
             "project's and the files given")
    p.add_argument("paths", nargs="*", metavar="PATH", help="matrix files to list too")
    p.add_argument("--dir", dest="directory", default="matrices",
                   help="the project's matrices directory (default: ./matrices, if it exists)")
    _add_results(sub)
    return parser


def _add_results(sub: argparse._SubParsersAction) -> None:
    p = _add(sub, "results", "print each case's runs, pass and flake rate and the trends of "
             "its figures from the results store")
    p.add_argument("--store", default="results.sqlite", help=STORE_HELP)
    p.add_argument("--case", metavar="GLOB", help="only cases whose id matches GLOB")
    p.add_argument("--html", metavar="OUT", help="write a page with the trends as plots")
    p.add_argument("--import", dest="imports", nargs="+", metavar="DIR",
                   help="first append the run directories below each DIR to the store")
    p = _add(sub, "compare", "print the cases whose verdict changed and the figures that "
             "moved beyond their spread between two run ids or two Kafka versions")
    p.add_argument("a", metavar="A", help="a run id or a Kafka version")
    p.add_argument("b", metavar="B", help="a run id or a Kafka version")
    p.add_argument("--store", default="results.sqlite", help=STORE_HELP)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "spark_master", "") is None and not os.environ.get(ENV_MASTER):
        # a one-off command joins a warm engine when there is one: 3 s instead of a fresh
        # JVM's 10 s for a small history (docs/spark.md); it never starts one for this
        args.spark_master = AUTO
    module_name, func_name = COMMANDS[args.command].split(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
        return int(func(args) or 0)
    except KreplicaError as exc:
        print(f"kreplica {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # exit 1 means "found invalid": a crash must not say that
        if os.environ.get(ENV_TRACEBACK):
            raise
        print(f"kreplica {args.command}: could not run: {type(exc).__name__}: "
              f"{str(exc).splitlines()[0] if str(exc) else ''} (a bug; set {ENV_TRACEBACK}=1 "
              f"for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

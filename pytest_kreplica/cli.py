"""The ``kreplica`` command. Each sub-command lives in the module that owns it; this
file only parses arguments and turns our errors, and any other failure to run, into one
line and exit status 2 (1 is kept for "checked and found invalid")."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

ENV_TRACEBACK = "KREPLICA_TRACEBACK"
# sub-command -> "module:function"; the function takes the parsed args, returns an exit code
COMMANDS = {
    "check": "pytest_kreplica.checker.cli:run_check",
    "verify-logs": "pytest_kreplica.replicas.cli:run_verify_logs",
    "cluster": "pytest_kreplica.cluster.cli:run_cluster",
    "fetch": "pytest_kreplica.distribution:run_fetch",
    "image": "pytest_kreplica.cluster.docker_image:run_image",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kreplica", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="check a run directory's history (Spark)")
    p.add_argument("run_dir")
    p.add_argument("--semantics", choices=["at-least-once", "exactly-once", "at-most-once"])
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--spark-master", help="Spark master URL (env KREPLICA_SPARK_MASTER)")

    p = sub.add_parser("verify-logs", help="compare every replica's log batch by batch (Spark)")
    p.add_argument("run_dir")
    p.add_argument("--json", action="store_true")
    p.add_argument("--spark-master", help="Spark master URL (env KREPLICA_SPARK_MASTER)")

    p = sub.add_parser("cluster", help="start or stop a cluster by hand")
    csub = p.add_subparsers(dest="cluster_command", required=True)
    up = csub.add_parser("up", help="start a cluster; Ctrl-C stops it")
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--version", dest="kafka_version")
    up.add_argument("--dir", dest="directory")
    up.add_argument("--detach", action="store_true", help="leave it running; stop with down")
    down = csub.add_parser("down", help="stop a cluster started with --detach")
    down.add_argument("--dir", dest="directory", required=True)

    p = sub.add_parser("fetch", help="resolve a Kafka version's jars into the cache")
    p.add_argument("--version", dest="kafka_version")

    p = sub.add_parser("image", help="Docker images for the docker backend")
    isub = p.add_subparsers(dest="image_command", required=True)
    b = isub.add_parser("build", help="build the broker image locally")
    b.add_argument("--version", dest="kafka_version")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    module_name, func_name = COMMANDS[args.command].split(":")
    from .errors import KreplicaError

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

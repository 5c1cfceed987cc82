"""Formatting a process cluster's storage: by copying a template (no JVM per node), or with
Kafka's StorageTool, which a facility asking for tool arguments needs (a dynamic KRaft
quorum's ``--initial-controllers``: the voters, each with its metadata directory's id, go
into the bootstrap checkpoint of every node, so no two clusters can share a template)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ...errors import ClusterError
from ..base import ClusterSpec, Node
from ..kafka import config as kconfig
from ..kafka import prepared

FORMAT_TIMEOUT_S = 120.0


def from_template(dist, spec: ClusterSpec, cluster_id: str, nodes: Sequence[Node]) -> bool:
    """Format every node by copying the version's bootstrap checkpoint (made once by the
    real StorageTool) and writing ``meta.properties``: what ``format`` writes, without a
    JVM per node. False when no template can be had or applies (then the real tool runs)."""
    if any(k.startswith("unstable.") for k, _ in spec.broker_config):
        return False  # unstable feature flags change what format writes
    template = prepared.ensure_format_template(dist)
    if template is None:
        return False
    for node in nodes:
        shutil.copyfile(template, node.log_dir / template.name)
        (node.log_dir / "meta.properties").write_text(
            f"version=1\ncluster.id={cluster_id}\nnode.id={node.node_id}\n"
            f"directory.id={kconfig.new_cluster_id()}\n")
    return True


def with_tool(command: Callable[[str, list[str]], list[str]],
              popen: Callable[[list[str], Path], subprocess.Popen],
              kill: Callable[[subprocess.Popen], None], cluster_id: str,
              nodes: Sequence[Node], extra_args: Sequence[str] = ()) -> None:
    """Format every node's storage in parallel (StorageTool, same class in 3.9 and 4.x);
    ``extra_args``: what the cluster's facilities add (a dynamic quorum's
    ``--initial-controllers``)."""
    quorum = list(extra_args)
    procs = []
    for node in nodes:
        home = node.log_file.parent
        cmd = command("kafka.tools.StorageTool",
                      ["format", "-t", cluster_id, "-c", str(home / "server.properties"),
                       "--ignore-formatted", *quorum])
        cmd = [c for c in cmd if not c.startswith("-Xm")]  # small tool: default heap
        procs.append((node, home / "format.log", popen(cmd, home / "format.log")))
    failures = []
    deadline = time.monotonic() + FORMAT_TIMEOUT_S
    for node, log_path, proc in procs:
        try:
            code = proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            kill(proc)
            code = "timeout"
        if code != 0:
            failures.append(f"node {node.node_id} (exit {code}, log {log_path})")
    if failures:
        raise ClusterError("formatting storage failed (expected exit 0) for "
                           + "; ".join(failures))

"""``replicas.json`` (HISTORY.md "Replica logs") read and checked, and the segment files it
points at listed. Bad input raises ``HistoryError`` naming the file, the key and what is
allowed, so the CLI prints one line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import HistoryError
from ...rundir import REPLICAS_JSON
from .batches import segment_base_offset


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    high_watermark: int


@dataclass(frozen=True)
class SegmentFile:
    topic: str
    partition: int
    node: int
    path: str  # where to read it
    file: str  # how to name it in reports: relative to the run directory when inside it
    base_offset: int
    next_base_offset: int | None  # the next segment's base offset on that replica
    closed: bool  # every segment of a replica's partition but its last


@dataclass(frozen=True)
class ReplicaLayout:
    run_dir: Path
    nodes: dict[int, Path]
    partitions: tuple[PartitionInfo, ...]
    at_rest: bool

    def partition_dir(self, node: int, topic: str, partition: int) -> Path:
        return self.nodes[node] / f"{topic}-{partition}"

    def segment_files(self) -> list[SegmentFile]:
        """Every ``<base offset>.log`` of every listed replica, in offset order per replica."""
        out: list[SegmentFile] = []
        for p in self.partitions:
            for node in p.replicas:
                directory = self.partition_dir(node, p.topic, p.partition)
                if not directory.is_dir():
                    continue  # the replica holds nothing: judged as missing every batch
                logs = sorted((base, path) for path in directory.glob("*.log")
                              if (base := segment_base_offset(path)) is not None)
                for i, (base, path) in enumerate(logs):
                    nxt = logs[i + 1][0] if i + 1 < len(logs) else None
                    out.append(SegmentFile(p.topic, p.partition, node, str(path),
                                           self._display(path), base, nxt,
                                           closed=nxt is not None))
        return out

    def _display(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.run_dir))
        except ValueError:
            return str(path)


def _want(cond: bool, where: str, key: str, allowed: str, seen: Any) -> None:
    if not cond:
        raise HistoryError(f"{where}: key {key!r} must be {allowed}, found {seen!r}")


def load_layout(run_dir: str | Path) -> ReplicaLayout:
    """Read ``RUN_DIR/replicas.json``; every replica's node must map to an existing dir."""
    run_dir = Path(run_dir)
    path = run_dir / REPLICAS_JSON
    if not run_dir.is_dir():
        raise HistoryError(f"{run_dir}: not a directory")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HistoryError(f"{path}: missing (the run took no replica snapshot)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HistoryError(f"{path}: cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise HistoryError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    where = str(path)
    _want(isinstance(doc, dict), where, "<top level>", "an object", type(doc).__name__)
    nodes_doc = doc.get("nodes")
    _want(isinstance(nodes_doc, dict) and nodes_doc, where, "nodes",
          "an object mapping node ids to log directories", nodes_doc)
    nodes: dict[int, Path] = {}
    for key, value in nodes_doc.items():
        _want(str(key).lstrip("-").isdigit(), where, f"nodes.{key}", "an integer node id", key)
        _want(isinstance(value, str) and value, where, f"nodes.{key}",
              "a directory path (relative to the run directory or absolute)", value)
        directory = Path(value) if Path(value).is_absolute() else run_dir / value
        if not directory.is_dir():
            raise HistoryError(f"{where}: key 'nodes.{key}' names {value!r}, "
                               f"which is not a directory")
        nodes[int(key)] = directory
    parts_doc = doc.get("partitions")
    _want(isinstance(parts_doc, list) and parts_doc, where, "partitions",
          "a non-empty list of objects (a snapshot of no partition checks nothing)", parts_doc)
    partitions = []
    for i, p in enumerate(parts_doc):
        at = f"partitions[{i}]"
        _want(isinstance(p, dict), where, at, "an object", p)
        _want(isinstance(p.get("topic"), str) and p["topic"], where, f"{at}.topic",
              "a topic name", p.get("topic"))
        for key in ("partition", "high_watermark"):
            v = p.get(key)
            _want(isinstance(v, int) and not isinstance(v, bool) and v >= 0, where,
                  f"{at}.{key}", "an integer >= 0", v)
        leader = p.get("leader")
        _want(leader is None or (isinstance(leader, int) and not isinstance(leader, bool)),
              where, f"{at}.leader", "a node id or null", leader)
        lists = {}
        for key in ("replicas", "isr"):
            v = p.get(key)
            _want(isinstance(v, list) and all(isinstance(n, int) and not isinstance(n, bool)
                                              for n in v),
                  where, f"{at}.{key}", "a list of node ids", v)
            lists[key] = tuple(v)
        _want(bool(lists["replicas"]), where, f"{at}.replicas", "a non-empty list of node ids",
              p.get("replicas"))
        for n in lists["replicas"]:
            _want(n in nodes, where, f"{at}.replicas",
                  f"node ids listed in 'nodes' ({', '.join(map(str, sorted(nodes)))})", n)
        for n in lists["isr"]:
            _want(n in lists["replicas"], where, f"{at}.isr",
                  f"a subset of replicas {list(lists['replicas'])}", n)
        partitions.append(PartitionInfo(p["topic"], p["partition"],
                                        None if leader is None or leader < 0 else leader,
                                        lists["replicas"], lists["isr"], p["high_watermark"]))
    at_rest = doc.get("at_rest", True)
    _want(isinstance(at_rest, bool), where, "at_rest", "true or false", at_rest)
    seen = set()
    for p in partitions:
        key = (p.topic, p.partition)
        if key in seen:
            raise HistoryError(f"{where}: key 'partitions' lists {p.topic}-{p.partition} twice")
        seen.add(key)
    return ReplicaLayout(run_dir, nodes, tuple(partitions), at_rest)

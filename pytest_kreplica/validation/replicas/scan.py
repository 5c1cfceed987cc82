"""The per-partition scan task of ``verify_logs`` (runs in Spark's Python workers).

One task reads every replica of its partitions side by side, batch by batch, and collapses
each base offset whose batch is sound and byte-identical on every listed replica into one
``range`` row per replica (its first and last offset: all the comparison needs of them).
Only the other batches become ``batch`` rows, so a clean log of millions of batches reaches
Spark as a few rows. Invariant the comparison relies on: a base offset is either collapsed
on every replica or a ``batch`` row on every replica holding it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .batches import Batch, SegmentScanner

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

ARROW_ROWS = 65536

SCAN_COLUMNS = (
    ("kind", "string"),  # "batch", "range" or "segment"
    ("topic", "string"), ("partition", "int"), ("node", "int"), ("file", "string"),
    ("position", "bigint"), ("base_offset", "bigint"), ("last_offset", "bigint"),
    ("length", "bigint"), ("leader_epoch", "int"), ("stored_crc", "bigint"),
    ("crc_ok", "boolean"), ("content_hash", "binary"), ("problem", "string"),
    # segment rows: the file's sha256 and whether it is closed; segment and range rows: how
    # many batches they stand for
    ("sha256", "string"), ("closed", "boolean"), ("batches", "bigint"),
)
SCAN_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in SCAN_COLUMNS)


def scan_units_arrow(bins: list[list[dict[str, Any]]],
                     task_ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: each input row is a task number; out come the result rows
    (``RESULT_COLUMNS``) of every partition of that task's bin."""
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(),
             "boolean": pa.bool_(), "binary": pa.binary()}
    schema = pa.schema([(name, types[kind]) for name, kind in RESULT_COLUMNS])
    rows: list[tuple] = []

    def flush() -> pa.RecordBatch:
        cols = [pa.array(values, schema.field(i).type)
                for i, values in enumerate(zip(*rows, strict=True))]
        rows.clear()
        return pa.RecordBatch.from_arrays(cols, schema=schema)

    for block in task_ids:
        for task in block.column(0).to_pylist():
            for unit in bins[task]:
                rows.extend(judge_partition(unit, scan_partition(unit)))
                if len(rows) >= ARROW_ROWS:
                    yield flush()
    if rows:
        yield flush()


RESULT_COLUMNS = (
    ("what", "string"), ("topic", "string"), ("partition", "int"), ("node", "int"),
    ("kind", "string"), ("offset", "bigint"), ("n", "bigint"), ("file", "string"),
    ("position", "bigint"), ("problem", "string"), ("last_offset", "bigint"),
    ("sha256", "string"), ("closed", "boolean"), ("length", "bigint"), ("batches", "bigint"),
    ("stored_crc", "bigint"), ("hashes", "string"),
)
RESULT_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in RESULT_COLUMNS)
EXAMPLES_PER_KIND = 5


def _out(what: str, unit: dict[str, Any], **values: Any) -> tuple:
    values.update(what=what, topic=unit["topic"], partition=unit["partition"])
    return tuple(values.get(name) for name, _ in RESULT_COLUMNS)


def judge_partition(unit: dict[str, Any], rows: Iterator[tuple]) -> list[tuple]:
    """HISTORY.md "Replica logs" over one partition's scan rows (all its replicas): corrupt,
    missing and divergent batches of the committed range (counts, first offset, the first
    few examples), every replica's stored crc at the first anomaly, segment mismatches and
    the segment rows. Collapsed ranges count only for where a replica's log starts and ends."""
    hw, isr = unit["hw"], set(unit["isr"])
    detail: list[tuple] = []
    segs: list[tuple] = []
    span: dict[int, list[int]] = {}  # node -> [first offset held, last offset held]
    for r in rows:
        if r[0] == "segment":
            segs.append(r)
            continue
        if r[0] == "batch":
            detail.append(r)
        s = span.setdefault(r[3], [r[6], r[7]])
        s[0], s[1] = min(s[0], r[6]), max(s[1], r[7])
    # a replica whose every batch retention deleted holds only an empty active segment: its
    # log starts at that segment's base offset, and nothing below it is missing there
    emptied = {}
    for r in segs:
        if r[3] not in span:
            emptied[r[3]] = max(emptied.get(r[3], r[6]), r[6])
    lo = max([s[0] for s in span.values()] + list(emptied.values()), default=0)
    committed = [r for r in detail if lo <= r[6] < hw]
    found: dict[str, list[tuple]] = {"corrupt": [], "missing": [], "divergent": []}
    for r in committed:  # (offset, node, file, position, problem)
        if r[13] is not None:
            found["corrupt"].append((r[6], r[3], r[4], r[5], r[13]))
    held = {(r[3], r[6]) for r in committed}
    for offset in sorted({r[6] for r in committed}):
        for n in unit["replicas"]:
            if (n, offset) not in held and (n in isr or (n in span and offset <= span[n][1])):
                found["missing"].append((offset, n, None, None, None))
    copies: dict[int, set[bytes]] = {}
    for r in committed:
        if r[13] is None:
            copies.setdefault(r[6], set()).add(r[12])
    found["divergent"] = [(o, None, None, None, None) for o, c in sorted(copies.items())
                          if len(c) > 1]
    out = []
    order = {"corrupt": 0, "divergent": 1, "missing": 2}
    firsts = []
    for kind, items in found.items():
        if not items:
            continue
        items.sort(key=lambda x: (x[0], -1 if x[1] is None else x[1]))
        firsts.append((items[0][0], order[kind]))
        out.append(_out("count", unit, kind=kind, n=len(items), offset=items[0][0]))
        for rank, (offset, node, file, position, problem) in enumerate(
                items[:EXAMPLES_PER_KIND], 1):
            out.append(_out("example", unit, kind=kind, n=rank, offset=offset, node=node,
                            file=file, position=position, problem=problem))
    if firsts:
        first = min(firsts)[0]
        out.extend(_out("crc", unit, node=r[3], offset=first, stored_crc=r[10])
                   for r in detail if r[6] == first)
    closed: dict[int, dict[int, str]] = {}
    for r in segs:
        if r[15]:
            closed.setdefault(r[6], {})[r[3]] = r[14]
    for base, hashes in sorted(closed.items()):
        if len(hashes) == len(unit["replicas"]) and len(set(hashes.values())) > 1:
            out.append(_out("mismatch", unit, offset=base, hashes=json.dumps(hashes)))
    out.extend(_out("segment", unit, node=r[3], file=r[4], offset=r[6], last_offset=r[7],
                    length=r[8], sha256=r[14], closed=r[15], batches=r[16]) for r in segs)
    return out


def _batch_row(f: dict[str, Any], b: Batch) -> tuple:
    if b.length:
        return ("batch", f["topic"], f["partition"], f["node"], f["file"], b.position,
                b.base_offset, b.last_offset, b.length, b.leader_epoch, b.stored_crc,
                b.crc_ok, b.content_hash, b.problem, None, None, None)
    # no readable header: no crc, epoch or hash
    return ("batch", f["topic"], f["partition"], f["node"], f["file"], b.position,
            b.base_offset, b.last_offset, 0, None, None, False, None, b.problem,
            None, None, None)


def _node_batches(files: list[dict[str, Any]], segments: list[tuple]
                  ) -> Iterator[tuple[dict[str, Any], Batch]]:
    """One replica's batches in file order; each file's segment row is appended to
    ``segments`` once the file has been read to its end."""
    for f in files:
        scanner = SegmentScanner(f["path"], first_offset=f["base_offset"],
                                 next_segment_offset=f["next_base_offset"])
        for b in scanner:
            yield f, b
        segments.append(("segment", f["topic"], f["partition"], f["node"], f["file"], None,
                         f["base_offset"], scanner.last_offset, scanner.size, None, None,
                         None, None, None, scanner.sha256, f["closed"], scanner.batches))


def scan_partition(unit: dict[str, Any]) -> Iterator[tuple]:
    """The rows of one partition: ``unit`` has ``topic``, ``partition``, ``replicas`` (every
    listed node) and ``files`` (per node, in offset order; a node without files holds
    nothing and so stops every collapse)."""
    nodes = list(unit["replicas"])
    by_node: dict[int, list[dict[str, Any]]] = {n: [] for n in nodes}
    for f in unit["files"]:
        by_node[f["node"]].append(f)
    segments: list[tuple] = []
    streams = [_node_batches(by_node[n], segments) for n in nodes]
    heads = [next(s, None) for s in streams]
    first = last = None
    collapsed = 0
    detail = False  # after a corrupt batch anywhere: every remaining batch is a row
    while True:
        live = [i for i, h in enumerate(heads) if h is not None]
        if not live:
            break
        if not detail:
            b0 = heads[0][1] if heads[0] is not None else None
            if (b0 is not None and b0.problem is None and len(live) == len(heads)
                    and all(h[1].problem is None and h[1].base_offset == b0.base_offset
                            and h[1].last_offset == b0.last_offset
                            and h[1].content_hash == b0.content_hash for h in heads)):
                if first is None:
                    first = b0.base_offset
                last = b0.last_offset
                collapsed += 1
                heads = [next(s, None) for s in streams]
                continue
            if any(heads[i][1].problem is not None for i in live):
                detail = True
        if detail:
            take = live
        else:  # the lowest base offset, on the replicas holding it, as rows
            low = min(heads[i][1].base_offset for i in live)
            take = [i for i in live if heads[i][1].base_offset == low]
        for i in take:
            yield _batch_row(*heads[i])
            heads[i] = next(streams[i], None)
    if collapsed:
        for n in nodes:
            yield ("range", unit["topic"], unit["partition"], n, None, None, first, last,
                   None, None, None, None, None, None, None, None, collapsed)
    yield from segments

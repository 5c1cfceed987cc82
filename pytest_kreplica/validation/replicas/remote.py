"""The remote tier of a tiered case: its segments copied into the run directory and checked.

Kafka's ``LocalTieredStorage`` keeps each uploaded segment as
``<topic>-<partition>-<topic id>/<start offset, 20 digits>-<segment id>.log``. The snapshot
copies the ``.log`` files of a case's partitions into ``remote/<topic>-<partition>/``; the
check reads them with the replica verifier's segment scanner and judges, per partition:

- ``corrupt_batches``: a batch whose stored CRC-32C does not hold or whose frame is broken;
- ``gaps``: offsets from 0 to the remote end that no remote segment holds (a segment
  uploaded twice, by two leaders, may overlap another: its records must then agree);
- ``conflicts``: one offset with two different ids in two remote copies;
- ``boundary_gaps``: the leader's local log starts past the remote end + 1 (records in
  neither tier);
- ``wrong_ids`` / ``missing_acked``: an acknowledged record below the local log start whose
  offset holds another id in the remote tier, or no record at all;
- ``empty``: a partition without any remote segment, or whose leader kept its whole log
  locally (the remote tier was not used: a tiered case that tiered nothing checked nothing).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .batches import SegmentScanner
from .records import RecordDecodeError, iter_record_ids

__all__ = ["ANOMALIES", "REMOTE_DIR", "check_remote", "copy_remote", "remote_segments"]

REMOTE_DIR = "remote"  # below the run directory
ANOMALIES = ("corrupt_batches", "gaps", "conflicts", "boundary_gaps", "wrong_ids",
             "missing_acked", "empty")
EXAMPLES = 5
_SEGMENT = re.compile(r"^(\d{20})-[A-Za-z0-9_-]{22}\.log$")
_TOPIC_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")

Part = tuple[str, int]


def remote_segments(folder: Path) -> list[tuple[int, Path]]:
    """(start offset, path) of every remote segment file in one partition's folder."""
    found = []
    for path in folder.glob("*.log") if folder.is_dir() else ():
        match = _SEGMENT.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def copy_remote(store: Path, parts: Iterable[Part], run_dir: Path) -> int:
    """Copy the remote segments of ``parts`` from the store into ``run_dir/remote``; the
    number of files copied."""
    copied = 0
    wanted = [f"{t}-{p}" for t, p in parts]
    for folder in sorted(store.iterdir()) if store.is_dir() else ():
        # <topic>-<partition>-<topic id>: the id (22 characters) may hold "-" itself
        name, sep, topic_id = folder.name[:-23], folder.name[-23:-22], folder.name[-22:]
        if sep != "-" or name not in wanted or not _TOPIC_ID.match(topic_id):
            continue
        dest = run_dir / REMOTE_DIR / name
        dest.mkdir(parents=True, exist_ok=True)
        for _, path in remote_segments(folder):
            shutil.copyfile(path, dest / path.name)
            copied += 1
    return copied


def _partition_records(segments: list[tuple[int, Path]], found: dict[str, int],
                       examples: dict[str, list[Any]], where: str) -> dict[int, set[str]]:
    """offset -> the ids the remote copies hold there (corrupt batches counted)."""
    held: dict[int, set[str]] = {}
    for start, path in segments:
        for batch in SegmentScanner(path, first_offset=start, keep_data=True):
            if batch.corrupt or batch.data is None or not batch.crc_ok:
                _add(found, examples, "corrupt_batches",
                     f"{where}: {path.name} offset {batch.base_offset}: "
                     f"{batch.problem or 'crc mismatch'}")
                continue
            try:
                for offset, rid in iter_record_ids(batch.data):
                    held.setdefault(offset, set()).add(rid or "")
            except RecordDecodeError as exc:
                _add(found, examples, "corrupt_batches", f"{where}: {path.name}: {exc}")
    return held


def _add(found: dict[str, int], examples: dict[str, list[Any]], kind: str, text: str,
         n: int = 1) -> None:
    found[kind] += n
    if len(examples.setdefault(kind, [])) < EXAMPLES:
        examples[kind].append(text)


def _judge_partition(part: Part, run_dir: Path, local_start: int | None,
                     acked: Mapping[int, str], found: dict[str, int],
                     examples: dict[str, list[Any]]) -> dict[str, Any]:
    where = f"{part[0]}-{part[1]}"
    segments = remote_segments(run_dir / REMOTE_DIR / where)
    held = _partition_records(segments, found, examples, where)
    remote_end = max(held) if held else -1
    if not segments or not local_start:
        _add(found, examples, "empty", f"{where}: {len(segments)} remote segments, leader's "
             f"local log starts at {local_start} (expected segments and a start > 0)")
    holes = [o for o in range(remote_end + 1) if o not in held]
    if holes:
        _add(found, examples, "gaps", f"{where}: offsets {holes[0]}..{holes[-1]} "
             f"({len(holes)} missing) below the remote end {remote_end}", len(holes))
    for offset in sorted(o for o, ids in held.items() if len(ids) > 1):
        _add(found, examples, "conflicts", f"{where}: offset {offset} holds {sorted(held[offset])}")
    if local_start is not None and local_start > remote_end + 1:
        _add(found, examples, "boundary_gaps", f"{where}: remote end {remote_end}, leader's "
             f"local log start {local_start}: offsets {remote_end + 1}..{local_start - 1} in "
             "neither tier")
    for offset, rid in sorted(acked.items()):
        if local_start is None or offset >= local_start:
            continue
        if offset not in held:
            _add(found, examples, "missing_acked", f"{where}: acknowledged {rid} at {offset} "
                 "is below the local log start and not in the remote tier")
        elif rid not in held[offset]:
            _add(found, examples, "wrong_ids", f"{where}: acknowledged {rid} at {offset}, "
                 f"remote tier holds {sorted(held[offset])}")
    return {"topic": part[0], "partition": part[1], "segments": len(segments),
            "remote_end": remote_end, "local_start": local_start}


def check_remote(run_dir: str | Path, local_starts: Mapping[Part, int | None],
                 acked: Mapping[Part, Mapping[int, str]]) -> dict[str, Any]:
    """Judge the copied remote tier of every partition in ``local_starts`` (the leader's
    local log start offset at the final read) against the acknowledged records ``acked``
    (offset -> id per partition). ``valid`` when no anomaly of ``ANOMALIES`` was seen."""
    run_dir = Path(run_dir)
    found = dict.fromkeys(ANOMALIES, 0)
    examples: dict[str, list[Any]] = {}
    partitions = [_judge_partition(part, run_dir, local_starts[part], acked.get(part, {}),
                                   found, examples) for part in sorted(local_starts)]
    return {"valid": not any(found.values()), "counts": found, "examples": examples,
            "partitions": partitions,
            "segments": sum(p["segments"] for p in partitions)}

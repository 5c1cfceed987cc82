"""verify-logs throughput beside ``sha256sum`` over the same segment files, in the same run.

Two data sets of >= 2 GiB each (3 replicas of one partition, 256 MiB segments), written as
valid record batch v2 files (kafka-python's batch builder makes template batches; copies get
their own base offsets, which lie outside the CRC):

* ``large``: ~1 MiB (uncompressed) lz4 batches, as an async producer with a big batch.size
  writes them;
* ``1-record``: one ~100-byte record per batch, as a synchronous producer writes them;
* ``mixed``: 440 partitions x 3 replicas of 1 MiB segments, batches of 1 to 1000 records
  (none, lz4, zstd), the shape of a real matrix run's segments (``--gib 0.69`` matches its size).

For each: the page cache is warmed, then ``sha256sum`` over all files and ``verify_logs``
(warm Spark session) alternate ``--runs`` times; medians and their ratio are printed, with the
single-core batch-reader rate that bounds the verifier. Generated data is deleted at the end.

    PYTHONPATH=. python benchmarks/bench_verify_logs.py [--gib 2.1] [--runs 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_kreplica.validation.replicas.batches import SegmentScanner
from pytest_kreplica.validation.replicas.synth import build_batch, segment_name

SEGMENT_BYTES = 256 << 20
REPLICAS = (1, 2, 3)


def large_batches() -> list[bytes]:
    """Templates: 1000 records of ~1 KiB, half random hex (so lz4 keeps ~half)."""
    out = []
    for t in range(8):
        values = [f"big-{t}-{i} ".encode() + os.urandom(256).hex().encode() + b"x" * 500
                  for i in range(1000)]
        out.append(build_batch(0, values, codec="lz4"))
    return out


def write_large(directory: Path, total: int) -> int:
    templates = large_batches()
    offset, written, seg_index = 0, 0, 0
    while written < total:
        path = directory / segment_name(offset)
        with open(path, "wb") as f:
            size = 0
            while size < SEGMENT_BYTES and written + size < total:
                tpl = bytearray(templates[seg_index % len(templates)])
                seg_index += 1
                struct.pack_into(">q", tpl, 0, offset)
                offset += 1000
                f.write(tpl)
                size += len(tpl)
        written += size
    return offset


def write_single(directory: Path, total: int) -> int:
    tpl = np.frombuffer(build_batch(0, [b"sync-id " + b"p" * 92]), dtype=np.uint8)
    per_segment = SEGMENT_BYTES // len(tpl)
    offset, written = 0, 0
    while written < total:
        n = min(per_segment, (total - written) // len(tpl) + 1)
        block = np.tile(tpl, n).reshape(n, len(tpl))
        block[:, :8] = np.arange(offset, offset + n, dtype=">i8").view(np.uint8).reshape(n, 8)
        (directory / segment_name(offset)).write_bytes(block.tobytes())
        offset += n
        written += n * len(tpl)
    return offset


MIXED_PARTITIONS = 440
MIXED_SEGMENT_BYTES = 1 << 20


def mixed_batches() -> list[bytes]:
    """Templates as a mixed workload writes them: one-record batches (sync producers), small
    uncompressed ones, and lz4/zstd batches of 100 and 1000 records (async producers)."""
    rec = [f"mixed-{i} ".encode() + os.urandom(40).hex().encode() for i in range(1000)]
    return [build_batch(0, rec[:1]), build_batch(0, rec[:1]), build_batch(0, rec[:10]),
            build_batch(0, rec[:100], codec="lz4"), build_batch(0, rec[:1]),
            build_batch(0, rec[:1000], codec="zstd"), build_batch(0, rec[:3])]


def make_mixed_run(root: Path, gib: float) -> tuple[Path, list[Path]]:
    """``mixed``: MIXED_PARTITIONS partitions x 3 replicas, 1 MiB segments, batches of
    1 to 1000 records (the shape of a real matrix's topics)."""
    run = root / "mixed"
    templates = [(tpl, struct.unpack_from(">i", tpl, 23)[0] + 1) for tpl in mixed_batches()]
    per_partition = int(gib * (1 << 30) / len(REPLICAS) / MIXED_PARTITIONS) + 1
    parts = []
    for p in range(MIXED_PARTITIONS):
        first = run / "replicas" / "1" / f"bench-{p}"
        first.mkdir(parents=True)
        offset, written, i = 0, 0, p
        while written < per_partition:
            with open(first / segment_name(offset), "wb") as f:
                size = 0
                while size < MIXED_SEGMENT_BYTES and written + size < per_partition:
                    tpl, records = templates[i % len(templates)]
                    i += 1
                    data = bytearray(tpl)
                    struct.pack_into(">q", data, 0, offset)
                    offset += records
                    f.write(data)
                    size += len(data)
            written += size
        for node in REPLICAS[1:]:
            shutil.copytree(first, run / "replicas" / str(node) / f"bench-{p}")
        parts.append({"topic": "bench", "partition": p, "leader": 1,
                      "replicas": list(REPLICAS), "isr": list(REPLICAS),
                      "high_watermark": offset})
    (run / "replicas.json").write_text(json.dumps({
        "nodes": {str(n): f"replicas/{n}" for n in REPLICAS}, "partitions": parts,
        "at_rest": True}))
    return run, sorted(run.glob("replicas/*/*/*.log"))


def make_run(root: Path, kind: str, gib: float) -> tuple[Path, list[Path]]:
    if kind == "mixed":
        return make_mixed_run(root, gib)
    run = root / kind
    per_replica = int(gib * (1 << 30) / len(REPLICAS)) + 1
    first = run / "replicas" / "1" / "bench-0"
    first.mkdir(parents=True)
    end = (write_large if kind == "large" else write_single)(first, per_replica)
    for node in REPLICAS[1:]:
        target = run / "replicas" / str(node) / "bench-0"
        target.mkdir(parents=True)
        for f in sorted(first.glob("*.log")):
            shutil.copyfile(f, target / f.name)
    (run / "replicas.json").write_text(json.dumps({
        "nodes": {str(n): f"replicas/{n}" for n in REPLICAS},
        "partitions": [{"topic": "bench", "partition": 0, "leader": 1,
                        "replicas": list(REPLICAS), "isr": list(REPLICAS),
                        "high_watermark": end}],
        "at_rest": True}))
    return run, sorted(run.glob("replicas/*/*/*.log"))


def tree_cpu() -> float:
    """CPU seconds used so far by this process and its descendants (the Spark JVM and its
    Python workers): live processes' own time plus what their reaped children used."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + (t.children_user + t.children_system if p is not me
                                      else 0.0)
    return total


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=2.1, help="data per set (default 2.1)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", help="where to write the data (default: a temp dir)")
    ap.add_argument("--sets", default="large,1-record",
                    help="comma-separated: large, 1-record, mixed")
    args = ap.parse_args()

    from pytest_kreplica.validation.engine.spark import get_spark, stop_spark
    from pytest_kreplica.validation.replicas.verify import verify_logs

    root = Path(tempfile.mkdtemp(prefix="kreplica-bench-", dir=args.dir))
    t0 = time.perf_counter()
    spark = get_spark()
    print(f"spark session start: {time.perf_counter() - t0:.1f} s", flush=True)
    results = []
    try:
        for kind in args.sets.split(","):
            t = time.perf_counter()
            run, files = make_run(root, kind, args.gib)
            size = sum(f.stat().st_size for f in files)
            print(f"\n[{kind}] {len(files)} files, {size / (1 << 30):.2f} GiB written in "
                  f"{time.perf_counter() - t:.0f} s", flush=True)
            for f in files:  # warm the page cache: both tools read from memory
                with open(f, "rb") as h:
                    while h.read(64 << 20):
                        pass
            one = SegmentScanner(files[0])
            cpu = time.process_time()
            t_one = timed(lambda one=one: sum(1 for _ in one))
            cpu = time.process_time() - cpu
            print(f"  batch reader, one file in this process: {one.size / t_one / 1e6:.0f} MB/s "
                  f"wall, {one.size / cpu / 1e6:.0f} MB/s of CPU time, "
                  f"{one.batches / cpu / 1e3:.0f} k batches per CPU second "
                  f"({one.batches} batches)", flush=True)
            sha, ver, sha_cpu, ver_cpu = [], [], [], []
            verdict = None
            for i in range(args.runs):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                sha.append(timed(lambda files=files: subprocess.run(
                    ["sha256sum", *map(str, files)], check=True, stdout=subprocess.DEVNULL)))
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                sha_cpu.append(after.ru_utime + after.ru_stime - before.ru_utime
                               - before.ru_stime)

                def verify(run=run):
                    nonlocal verdict
                    verdict = verify_logs(run, spark=spark)
                cpu0 = tree_cpu()
                ver.append(timed(verify))
                ver_cpu.append(tree_cpu() - cpu0)
                print(f"  run {i + 1}: sha256sum {sha[-1]:.1f} s ({sha_cpu[-1]:.1f} s CPU), "
                      f"verify-logs {ver[-1]:.1f} s ({ver_cpu[-1]:.1f} s CPU) "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
            assert verdict is not None and verdict.valid, verdict.summary()
            assert verdict.counts["bytes"] == size
            s, v = statistics.median(sha), statistics.median(ver)
            results.append((kind, size, verdict.counts["batches"], s, v,
                            statistics.median(sha_cpu), statistics.median(ver_cpu)))
            shutil.rmtree(run)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        stop_spark()
    print("\nset        GiB   batches   sha256sum MB/s  verify-logs MB/s  ratio   "
          "per CPU-second: sha256sum  verify-logs  ratio")
    for kind, size, batches, s, v, c, vc in results:
        print(f"{kind:9s} {size / (1 << 30):5.2f} {batches:10d}  {size / s / 1e6:14.0f}  "
              f"{size / v / 1e6:16.0f}  {s / v:5.2f}   {size / c / 1e6:24.0f}  "
              f"{size / vc / 1e6:11.0f}  {c / vc:5.2f}")
    print(f"(medians of {args.runs}; load average now {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

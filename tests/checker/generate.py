"""Random clean histories and planted anomalies for the property tests (pure Python).

A history is a list of actions in time order; ``write`` replays them through the real
RunWriter. ``plant`` changes a clean history so that exactly ``k`` anomalies of one kind
appear, and returns the counts the checker must then report."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from pytest_kreplica.history import RunWriter

ASSIGN = "assign"


@dataclass
class Part:
    topic: str
    partition: int
    producer: int
    consumer: int
    records: list[tuple[int, str]]           # (offset, id), acknowledged, in offset order
    stream: list = field(default_factory=list)  # consumer's items: (offset, id) or ASSIGN


@dataclass
class Gen:
    parts: list[Part]
    sends: list[dict]                  # every send, in invoke order
    extra_polls: list[tuple[int, list]] = field(default_factory=list)  # (process, stream)
    batch: int = 3

    def write(self, run_dir: Path) -> Path:
        clock = itertools.count(1000, 10)
        polls_made: dict[int, int] = {}
        with RunWriter(run_dir) as w:
            for s in self.sends:
                t = next(clock)
                w.send(**s, invoke_ns=t, complete_ns=t + 5)
            consumers = [(p.consumer, p.stream, p) for p in self.parts]
            consumers += [(proc, stream, part) for proc, (stream, part) in
                          ((proc, x) for proc, x in self.extra_polls)]
            for process, stream, part in consumers:
                call: list = []

                def flush(process=process, part=part, call=call):
                    if call:
                        n = polls_made.get(process, 0)
                        polls_made[process] = n + 1
                        t = next(clock)
                        for i, (offset, rid) in enumerate(call):
                            w.poll(process=process, poll=n, topic=part.topic,
                                   partition=part.partition, offset=offset, id=rid,
                                   time_ns=t, index=i)
                        call.clear()

                for item in stream:
                    if item == ASSIGN:
                        flush()
                        w.event("assign", process=process, time_ns=next(clock))
                        continue
                    call.append(item)
                    if len(call) >= self.batch:
                        flush()
                flush()
        return run_dir


@st.composite
def clean_histories(draw) -> Gen:
    n_parts = draw(st.integers(1, 3))
    parts, sends = [], []
    for j in range(n_parts):
        topic, partition = ("t", j) if j < 2 else ("u", 0)
        producer = draw(st.integers(0, 1))
        offset = draw(st.integers(0, 5))
        records = []
        for i in range(draw(st.integers(0, 8))):
            rid = f"{topic}{partition}-{i}"
            records.append((offset, rid))
            sends.append(dict(process=producer, topic=topic, partition=partition, id=rid,
                              offset=offset, status="ok"))
            offset += draw(st.sampled_from([1, 1, 1, 2]))  # 2: a transaction marker
            if draw(st.integers(0, 5)) == 0:  # a failed or indeterminate send, never read
                sends.append(dict(process=producer, topic=topic, partition=partition,
                                  id=f"{rid}-x", offset=None,
                                  status=draw(st.sampled_from(["fail", "info"]))))
        stream: list = list(records)
        if records and draw(st.booleans()):  # a rebalance, then a re-read from earlier
            back = draw(st.integers(0, len(records) - 1))
            stream += [ASSIGN, *records[back:]]
        parts.append(Part(topic, partition, producer, 10 + j, records, stream))
    return Gen(parts, sends, batch=draw(st.integers(1, 4)))


KINDS = ("lost", "unseen", "duplicated", "inconsistent_offsets", "aborted_reads", "unexpected",
         "nonmonotonic_polls", "poll_skips", "nonmonotonic_sends", "recovered")


def plant(draw, gen: Gen, kind: str, k: int) -> dict[str, int] | None:
    """Plant ``k`` anomalies of ``kind``; return the expected non-zero counts, or None when
    this history has no room for them."""
    parts = gen.parts
    inner = [(p, r) for p in parts for r in p.records[:-1]]  # not the last of its partition
    if kind in ("lost", "inconsistent_offsets"):
        if len(inner) < k:
            return None
        chosen = draw(st.lists(st.sampled_from(range(len(inner))), min_size=k, max_size=k,
                               unique=True))
        for idx in chosen:
            part, rec = inner[idx]
            if kind == "lost":  # never read; the consumer was reassigned past it
                part.stream = [ASSIGN if x == rec else x for x in part.stream]
            else:  # read back with another id at its offset
                part.stream = [(rec[0], f"x-{rec[1]}") if x == rec else x for x in part.stream]
        if kind == "lost":
            return {"lost": k}
        return {"inconsistent_offsets": k, "unexpected": k, "lost": k}
    if kind == "unseen":
        total = sum(len(p.records) for p in parts)
        if total < k:
            return None
        cut = 0
        for p in parts:
            take = min(k - cut, len(p.records))
            if take:
                gone = set(p.records[-take:])
                p.stream = [x for x in p.stream if x not in gone]
                cut += take
        return {"unseen": k}
    if kind in ("duplicated", "aborted_reads", "unexpected", "recovered"):
        part = draw(st.sampled_from(parts))
        acked = [r for p in parts for r in p.records]
        if kind == "duplicated" and len(acked) < k:
            return None
        last = max([o for o, _ in part.records], default=draw(st.integers(0, 3)))
        ids = (draw(st.lists(st.sampled_from([rid for _, rid in acked]), min_size=k,
                             max_size=k, unique=True)) if kind == "duplicated"
               else [f"{kind}-{i}" for i in range(k)])
        for i, rid in enumerate(ids):
            if kind in ("aborted_reads", "recovered"):
                gen.sends.append(dict(process=part.producer, topic=part.topic,
                                      partition=part.partition, id=rid, offset=None,
                                      status="fail" if kind == "aborted_reads" else "info"))
            part.stream.append((last + 1 + i, rid))
        return {kind: k}
    if kind in ("nonmonotonic_polls", "poll_skips"):
        need = 2 if kind == "nonmonotonic_polls" else 3
        roomy = [p for p in parts if len(p.records) >= need]
        if not roomy:
            return None
        for j in range(k):
            part = draw(st.sampled_from(roomy))
            recs = list(part.records)
            if kind == "nonmonotonic_polls":
                stream = [*recs, recs[draw(st.integers(0, len(recs) - 2))]]
            else:
                del recs[draw(st.integers(1, len(recs) - 2))]
                stream = recs
            gen.extra_polls.append((200 + j, (stream, part)))
        return {kind: k}
    if kind == "nonmonotonic_sends":
        # swap the invoke order of k disjoint, non-adjacent pairs of one stream's acked sends
        pairs = []
        for p in parts:
            idx = [i for i, s in enumerate(gen.sends) if s["topic"] == p.topic
                   and s["partition"] == p.partition and s["status"] == "ok"]
            pairs += [(idx[i], idx[i + 1]) for i in range(0, len(idx) - 1, 3)]
        if len(pairs) < k:
            return None
        for a, b in draw(st.lists(st.sampled_from(pairs), min_size=k, max_size=k, unique=True)):
            gen.sends[a], gen.sends[b] = gen.sends[b], gen.sends[a]
        return {"nonmonotonic_sends": k}
    raise ValueError(kind)

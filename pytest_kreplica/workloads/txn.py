"""The ``txn`` workload (matrix ``workload: txn``): Jepsen-style transactions.

Two transactional producers (kafka-python, each its own ``transactional_id``) write random
transactions of 1-4 records over the case's topics and partitions at the same time, and
commit or abort each by a seeded coin (3 in 4 commit). Running two at once is what lets
their open transactions interleave in partitions, the write-write cycles (G0) the checker
reports. Every record becomes a ``sends`` row with its transaction id, and every
transaction a ``txns`` row with its outcome: ``committed`` / ``aborted`` only when the
client said so, ``info`` when a commit or abort raised (it may have happened). Two
read_committed members of one consumer group, each a client process of its own
(``member_process`` running ``txn_group``'s reader: the nemesis target ``group-member``
SIGKILLs, SIGTERMs or SIGSTOPs the first one), and a read_uncommitted observer (the plain
workload's consumer, its polls labelled) read meanwhile. The run directory is
history version 2 (docs/history.md).

The module offers what the runner asks of a workload: ``produce`` and ``Consumer``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..cluster.admin.clients import close_producer
from ..faults import Component
from ..faults.registry import GROUP_MEMBER
from ..history import RunWriter, now_ns
from ..matrix import Case
from ..waits import wait_until
from . import plain
from .member_process import MemberProcess
from .plain import MAX_BLOCK_MS, REQUEST_TIMEOUT_MS, ProduceStats, classify, record_value
from .plain import Consumer as PlainConsumer
from .protocol import Workload

HISTORY_VERSION = 2
PRODUCER_PROCESSES, GROUP_PROCESSES, OBSERVER_PROCESS = (0, 3), (1, 2), 9
COMMIT_SHARE = 0.75
MAX_RECORDS = 4
DELIVERY_TIMEOUT_MS = 30_000
END_TIMEOUT_S = 20.0  # commit / abort / offsets in a transaction, then the producer is replaced
__all__ = ["Consumer", "HISTORY_VERSION", "WORKLOAD", "after_failure", "bounded", "end_transaction",
           "produce", "record_transaction", "settle_sends"]


def coordinator_keys(topics: Sequence[str]) -> dict[str, str]:
    """What the ``group_coordinator`` / ``txn_coordinator`` targets aim at: the read_committed
    group's id and the first producer's transactional id."""
    return {"group_coordinator": group_id(topics),
            "txn_coordinator": transactional_id(topics, PRODUCER_PROCESSES[0])}


def group_id(topics: Sequence[str]) -> str:
    return f"kr-group-{topics[0]}"[:200]


def transactional_id(topics: Sequence[str], process: int) -> str:
    return f"kr-txn-{topics[0]}-{process}"[:200]


def transactional_producer(case: Case, bootstrap: str, transactional_id: str):
    """An initialised transactional producer (acks all, idempotent)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap.split(","), client_id="kreplica-txn-producer",
        transactional_id=transactional_id, enable_idempotence=True, acks="all",
        compression_type=None if case.compression == "none" else case.compression,
        linger_ms=5, request_timeout_ms=REQUEST_TIMEOUT_MS,
        delivery_timeout_ms=DELIVERY_TIMEOUT_MS, max_block_ms=MAX_BLOCK_MS,
        transaction_timeout_ms=DELIVERY_TIMEOUT_MS, reconnect_backoff_max_ms=1000)
    producer.init_transactions()  # fences an earlier instance, aborts its open transaction
    return producer


def produce(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
            stats: ProduceStats | None = None, stop: threading.Event | None = None,
            process: int = PRODUCER_PROCESSES[0], keep_going: Callable[[], bool] | None = None,
            max_rate: float | None = None) -> ProduceStats:
    """Write transactions from every producer until ``messages`` records were sent between
    them (and while ``keep_going``); a producer's failure is raised once all have stopped."""
    stats = stats or ProduceStats()
    processes = (process, *[p for p in PRODUCER_PROCESSES if p != process])
    errors: list[BaseException] = []

    def one(index: int, proc: int) -> None:
        try:
            _produce_one(case, topics, bootstrap, writer, stats, stop, proc, index,
                         keep_going, max_rate / len(processes) if max_rate else None)
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i, p), name=f"kreplica-txn-producer-{p}",
                                daemon=True) for i, p in enumerate(processes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return stats


def _produce_one(case: Case, topics: Sequence[str], bootstrap: str, writer: RunWriter,
                 stats: ProduceStats, stop: threading.Event | None, process: int, index: int,
                 keep_going: Callable[[], bool] | None, max_rate: float | None) -> None:
    """One producer's loop; transaction ids carry the process, unique in the run."""
    rng = random.Random(case.seed * 1000 + index)
    targets = [(t, p) for t in topics for p in range(case.partitions)]
    txn_id = transactional_id(topics, process)
    producer = transactional_producer(case, bootstrap, txn_id)
    writer.event("start", process=process, detail=f"transactional producer {txn_id}")
    started, n, mine = time.monotonic(), 0, 0
    try:
        while stats.sent < case.messages or (keep_going is not None and keep_going()):
            if stop is not None and stop.is_set():
                break
            n += 1
            ok, sent = _one_transaction(producer, f"P{process}-T{n:06d}", rng, targets,
                                        case, writer, stats, process)
            mine += sent
            if not ok:  # the producer is unusable: a fresh one fences it
                trouble = close_producer(producer, 5.0)
                writer.event("client-crash", process=process,
                             detail="txn producer replaced" + (f"; {trouble}" if trouble else ""))
                producer = transactional_producer(case, bootstrap, txn_id)
            if max_rate:
                time.sleep(max(0.0, mine / max_rate - (time.monotonic() - started)))
    finally:  # as the plain workload's producer: a close that gave up is forced, and said
        trouble = close_producer(producer, 10.0)
        writer.event("stop", process=process, detail=trouble or "producer closed")


def _one_transaction(producer: Any, txn: str, rng: random.Random,
                     targets: list[tuple[str, int]], case: Case, writer: RunWriter,
                     stats: ProduceStats, process: int) -> tuple[bool, int]:
    """One transaction, recorded: (whether the producer is still usable, records sent)."""
    commit = rng.random() < COMMIT_SHARE
    picks = [rng.choice(targets) for _ in range(rng.randint(1, MAX_RECORDS))]
    begin, end_ns, error, usable = now_ns(), None, None, True
    sent: list[tuple[str, str, int, int, Any]] = []
    try:
        producer.begin_transaction()
        for i, (topic, partition) in enumerate(picks):
            rid = f"{txn}-{i}"
            invoke = now_ns()
            future = producer.send(topic, value=record_value(rid, case.message_bytes),
                                   partition=partition)
            sent.append((rid, topic, partition, invoke, future))
            # one record at a time, as Jepsen's client sends: each is appended before the
            # next leaves, so two producers' open transactions interleave record by record
            future.get(timeout=DELIVERY_TIMEOUT_MS / 1000)
        end_ns = now_ns()
        outcome = end_transaction(producer, commit)
    except Exception as exc:
        error = repr(exc)
        outcome, usable = after_failure(producer, commit, end_ns is not None)
    record_transaction(writer, stats, process, txn, outcome, sent, begin, end_ns, error)
    return usable, len(sent)


class TransactionCallTimeout(Exception):
    """A transactional call of the client did not return within its bound."""


def bounded(call: Callable[[], Any], what: str, timeout: float | None = None) -> None:
    """Run a transactional call of kafka-python with a bound. Its ``commit_transaction``,
    ``abort_transaction`` and ``send_offsets_to_transaction`` wait without one, and after the
    transaction coordinator's node was SIGKILLed an abort was seen waiting for good
    (kafka-python 3.0.12, docs/history.md): the call runs in a helper thread, and after
    ``timeout`` the caller gives up on the producer (the helper stays blocked on it)."""
    timeout = END_TIMEOUT_S if timeout is None else timeout
    failed: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
            failed.append(exc)

    helper = threading.Thread(target=run, daemon=True, name=f"kreplica-{what}")
    helper.start()
    helper.join(timeout)
    if helper.is_alive():
        raise TransactionCallTimeout(f"{what} did not return within {timeout:.0f} s")
    if failed:
        raise failed[0]


def settle_sends(futures: Sequence[Any], timeout: float = DELIVERY_TIMEOUT_MS / 1000) -> None:
    """Wait for every send of the open transaction; raise the first failure. Kafka's contract
    is that a transaction one of whose sends failed cannot commit, but kafka-python 3.0.12
    commits it when the send failed with a retriable error after its delivery timeout (a
    stalled partition): only what was acknowledged becomes visible, and the rest is lost
    without an error (tests/integration/test_kafka_python_txn.py). Awaiting each send before
    the commit turns that into a failed transaction, which is aborted."""
    deadline = time.monotonic() + timeout
    for future in futures:
        future.get(timeout=max(0.0, deadline - time.monotonic()))


def end_transaction(producer: Any, commit: bool) -> str:
    """Commit or abort the open transaction (bounded); its outcome."""
    if commit:
        bounded(producer.commit_transaction, "commit_transaction")
        return "committed"
    bounded(producer.abort_transaction, "abort_transaction")
    return "aborted"


def after_failure(producer: Any, commit: bool, ended: bool) -> tuple[str, bool]:
    """A transaction that raised: (its outcome, whether the producer is still usable). One
    never asked to commit is settled by an abort; a commit that raised is indeterminate."""
    if ended and commit:
        return "info", False
    try:
        bounded(producer.abort_transaction, "abort_transaction")
        return "aborted", True
    except Exception:
        return "info", False


def record_transaction(writer: RunWriter, stats: ProduceStats, process: int, txn: str,
                       outcome: str, sent: list[tuple[str, str, int, int, Any]], begin: int,
                       end_ns: int | None, error: str | None, *,
                       sources: Sequence[str] | None = None,
                       offsets: list[tuple[str, int, int]] | None = None) -> None:
    """A settled transaction into the history: a sends row per record (``sent``: id, topic,
    partition, invoke_ns, future), then its txns row. Only the producers' own records count
    towards ``messages``; a pipeline's copies (``sources``: the id each copies) do not."""
    done = now_ns()
    for n, (rid, topic, partition, invoke, future) in enumerate(sent):
        status, offset, err = _settled(future)
        writer.send(process=process, topic=topic, partition=partition, id=rid, offset=offset,
                    status=status, invoke_ns=invoke, complete_ns=done, error=err, txn=txn,
                    source=sources[n] if sources else None)
        if sources is None:
            with stats.lock:
                stats.sent += 1
        # what the drain waits for: committed records; aborted ones are never readable
        stats.count({"committed": status, "aborted": "fail"}.get(outcome, "info"), rid)
    writer.txn(process=process, txn=txn, status=outcome, begin_ns=begin, end_ns=end_ns,
               complete_ns=now_ns(), error=error, offsets=offsets)


def _settled(future: Any) -> tuple[str, int | None, str | None]:
    """A record's own status: ok with its offset, or what its error proves."""
    if not future.is_done:
        return "info", None, "not completed"
    if future.succeeded():
        return "ok", future.value.offset, None
    return classify(future.exception, retried=True), None, repr(future.exception)


class _Labelled:
    """The observer's writer: its polls carry ``isolation: read_uncommitted``."""

    def __init__(self, writer: RunWriter):
        self._writer = writer

    def poll(self, *args: Any, **kwargs: Any) -> None:
        self._writer.poll(*args, isolation="read_uncommitted", **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)


class Consumer:
    """The group's members and the observer, with the runner's consumer interface."""

    def __init__(self, topics: Sequence[str], partitions: int, bootstrap: Callable[[], str],
                 writer: RunWriter, isolation_level: str = "read_committed"):
        group = group_id(topics)
        self.members = [MemberProcess(list(topics), group, bootstrap, writer, p,
                                      isolation_level) for p in GROUP_PROCESSES]
        self.observer = PlainConsumer(topics, partitions, bootstrap, _Labelled(writer),
                                      process=OBSERVER_PROCESS,
                                      isolation_level="read_uncommitted")
        self.writer = writer
        self.errors: list[str] = []

    @property
    def polled(self) -> int:
        return sum(m.polled for m in self.members)

    def components(self) -> dict[str, Component]:
        """The first member as the nemesis' ``group-member`` target: it has recovered once
        its new incarnation joined the group with partitions assigned."""
        member = self.members[0]

        def rejoined(baseline: int, timeout: float) -> None:
            wait_until(lambda: member.joins > baseline, timeout,
                       f"group member {member.process} back in the group with partitions",
                       lambda: f"{member.joins} assignments, {baseline} before the restore")

        return {GROUP_MEMBER: Component(GROUP_MEMBER, "consumer group member", member,
                                        lambda: member.joins, rejoined)}

    def seen(self) -> set[str]:
        out: set[str] = set()
        for m in self.members:
            with m.lock:
                out |= m.seen
        return out

    def start(self) -> Consumer:
        for m in self.members:
            m.start()
        self.observer.start()
        return self

    def drain(self, acked_ids: set[str], timeout: float, readable_ends: Any = None
              ) -> set[str]:
        """Wait until the group has read every committed record or ``timeout`` passed."""
        self.writer.event("drain-start", process=GROUP_PROCESSES[0],
                          detail=f"waiting for {len(acked_ids)} committed records, "
                                 f"at most {timeout:.0f} s")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not acked_ids <= self.seen():
            if not any(m.alive() for m in self.members):
                break
            time.sleep(0.2)
        missing = acked_ids - self.seen()
        self.stop()
        self.writer.event("drain-end", process=GROUP_PROCESSES[0],
                          detail=f"{len(missing)} committed records unseen by the group")
        return missing

    def stop(self, timeout: float = 30.0) -> None:
        for m in self.members:
            m.stop(timeout)
        self.observer.stop(timeout)
        self.errors = [e for m in self.members for e in m.errors] + self.observer.errors


WORKLOAD = Workload(client=plain.CLIENT, client_version=plain.client_version,
                    produce=produce, consumer=Consumer, history_version=HISTORY_VERSION,
                    coordinator_keys=coordinator_keys)

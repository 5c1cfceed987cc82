"""The librdkafka client's child process (``python -m pytest_kreplica.workloads.rdkafka_child
produce|consume``): confluent-kafka's Producer or Consumer, each history row one JSON line
on stdout (``lines.LineWriter``) that the parent (``rdkafka_client``) writes.

The producer says ``invoke`` before each send (so the parent knows every id that may be in
the log, even after a SIGKILL) and one ``send`` row per delivery report: ``ok`` with the
report's offset, ``fail`` / ``info`` by ``delivery_status``. The consumer reads by manual
assignment from the beginning; each ``consume`` call that returned records is one poll, and
a ``positions`` line says where the client stands after it. SIGTERM stops either one: the
producer flushes (bounded) and writes off what is still unanswered as ``info``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, Producer, TopicPartition
from confluent_kafka import Consumer as RdConsumer

from ..history import now_ns
from .lines import LineWriter
from .reader import targets
from .sends import record_id, record_value

# librdkafka codes whose single attempt proves the record was not appended (sends.py's list)
DEFINITE_FAILURES = ("NOT_ENOUGH_REPLICAS", "INVALID_TOPIC_EXCEPTION", "MSG_SIZE_TOO_LARGE",
                     "RECORD_LIST_TOO_LARGE", "TOPIC_AUTHORIZATION_FAILED",
                     "INVALID_REQUIRED_ACKS", "INVALID_MSG")
# local codes of records that never left the client, whatever the retries
NEVER_SENT = ("_MSG_SIZE_TOO_LARGE", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC", "_INVALID_ARG")
CONSUME_BATCH = 2000


def delivery_status(err: Any, offset: int | None, retried: bool
                    ) -> tuple[int | None, str, str | None]:
    """``(offset, status, error)`` of one delivery report: ``ok`` only with an offset (acks=0
    reports none: ``info``), ``fail`` only when the record was definitely not written;
    with ``retried`` a broker's answer says nothing about earlier attempts (``info``)."""
    if err is None:
        if offset is None or offset < 0:
            return None, "info", "acks=0: no acknowledgement"
        return offset, "ok", None
    name = err.name()
    definite = name in NEVER_SENT or (not retried and name in DEFINITE_FAILURES)
    return None, "fail" if definite else "info", f"{name}: {err.str()}"


def poll_rows(messages: list[Any], process: int, poll_no: int, returned: int
              ) -> tuple[list[list[Any]], dict[tuple[str, int], int], list[str]]:
    """One ``consume`` call's records as poll rows (``RunWriter.poll`` arguments), the
    positions they show (next offset per partition) and the errors it returned."""
    rows, positions, errors = [], {}, []
    for msg in messages:
        if msg.error() is not None:
            errors.append(f"{msg.error().name()}: {msg.error().str()}")
            continue
        rows.append([process, poll_no, msg.topic(), msg.partition(), msg.offset(),
                     record_id(msg.value()), returned, len(rows)])
        positions[(msg.topic(), msg.partition())] = msg.offset() + 1
    return rows, positions, errors


def _stop_on_sigterm() -> threading.Event:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


def produce(args: argparse.Namespace, out: LineWriter) -> None:
    stop = _stop_on_sigterm()
    producer = Producer(json.loads(args.config))
    pairs = targets(args.topics.split(","), args.partitions)
    pending: dict[str, tuple[str, int, int]] = {}

    def report(message_id: str) -> Any:
        def done(err: Any, msg: Any) -> None:
            topic, partition, invoke = pending.pop(message_id)
            offset, status, text = delivery_status(err, msg.offset(), args.retried)
            out.send(args.process, topic, partition, message_id, offset, status, invoke,
                     now_ns(), text)
        return done

    started, i = time.monotonic(), -1
    while not stop.is_set():
        i += 1
        if i >= args.messages and not args.keep_going:
            break
        ahead = started + i / args.max_rate - time.monotonic() if args.max_rate else 0.0
        if ahead > 0:
            time.sleep(ahead)
        message_id, (topic, partition) = f"{args.id_prefix}{i}", pairs[i % len(pairs)]
        invoke = now_ns()
        out.emit("invoke", message_id, topic, partition, invoke)
        pending[message_id] = (topic, partition, invoke)
        _send(producer, out, args, pending, message_id, report(message_id))
        producer.flush(args.answer_s) if args.sync else producer.poll(0)
    producer.flush(args.answer_s)
    for message_id, (topic, partition, invoke) in list(pending.items()):
        out.send(args.process, topic, partition, message_id, None, "info", invoke, now_ns(),
                 "not completed when the producer stopped")


def _send(producer: Any, out: LineWriter, args: argparse.Namespace, pending: dict,
          message_id: str, on_delivery: Any) -> None:
    topic, partition, invoke = pending[message_id]
    while True:
        try:
            producer.produce(topic, value=record_value(message_id, args.message_bytes),
                             partition=partition, on_delivery=on_delivery)
            return
        except BufferError:  # the local queue is full: nothing was sent yet
            producer.poll(0.1)
        except KafkaException as exc:  # refused before the record left this process
            pending.pop(message_id, None)
            error = exc.args[0]
            out.send(args.process, topic, partition, message_id, None, "fail", invoke,
                     now_ns(), f"{error.name()}: {error.str()}")
            return


def consume(args: argparse.Namespace, out: LineWriter) -> None:
    stop = _stop_on_sigterm()
    consumer = RdConsumer(json.loads(args.config))
    tps = [TopicPartition(t, p, OFFSET_BEGINNING)
           for t, p in targets(args.topics.split(","), args.partitions)]
    consumer.assign(tps)
    out.event("assign", process=args.process,
              detail=" ".join(f"{tp.topic}:{tp.partition}" for tp in tps))
    poll_no = 0
    last: dict[tuple[str, int], int] = {}
    while not stop.is_set():
        messages = consumer.consume(num_messages=CONSUME_BATCH, timeout=0.2)
        if messages:
            poll_no += 1
            rows, _, errors = poll_rows(messages, args.process, poll_no, now_ns())
            for row in rows:
                out.poll(*row)
            for error in errors:  # the client retries by itself: for the log only
                print(f"consume: {error}", file=sys.stderr, flush=True)
        positions = {(tp.topic, tp.partition): tp.offset
                     for tp in consumer.position(tps) if tp.offset >= 0}
        if positions != last:
            out.emit("positions", [[t, p, o] for (t, p), o in positions.items()])
            last = positions
    consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("produce", "consume"))
    parser.add_argument("--config", required=True, help="the client's settings, JSON")
    parser.add_argument("--topics", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--process", type=int, required=True)
    parser.add_argument("--messages", type=int, default=0)
    parser.add_argument("--message-bytes", type=int, default=0)
    parser.add_argument("--sync", action="store_true")
    parser.add_argument("--keep-going", action="store_true")
    parser.add_argument("--retried", action="store_true")
    parser.add_argument("--max-rate", type=float, default=0.0)
    parser.add_argument("--answer-s", type=float, default=65.0)
    parser.add_argument("--id-prefix", default="", help="before each message number")
    args = parser.parse_args(argv)
    (produce if args.role == "produce" else consume)(args, LineWriter())
    return 0


if __name__ == "__main__":
    sys.exit(main())

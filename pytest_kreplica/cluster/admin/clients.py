"""Closing kafka-python clients without letting the close decide a case.

kafka-python 3.0.12's ``KafkaProducer.close(timeout)`` flushes first, and a flush that times
out raises ``KafkaTimeoutError`` before the sender thread is asked to stop (CI saw it after a
one-way partition). Raised from a workload's ``finally``, that error replaced what the
workload had recorded and named a close, not the run, as the failure. The records still
pending were already written off as indeterminate, so the run goes on and the verdict is
judged on the history; the event log says the close gave up.

A close that gave up left the producer open: its sender thread went on retrying the pending
batch, against ports a later cluster of the same worker may reuse, and the garbage collector
later closed it again, raising once more (``PytestUnraisableExceptionWarning`` in CI). So the
sender is then stopped without sending what is pending (kafka-python's ``Sender.force_close``,
"closes the sender without sending out any pending messages": the only way it offers, on an
attribute it does not document, hence the check that it is there), which fails the pending
batches, and the producer is closed again; its flush has nothing left to wait for. The
failed batches' callbacks record nothing: the workload wrote the pending records off as
``info`` before the close (its ``complete`` ignores a record no longer pending), and the
other callers wait for each send themselves.
"""

from __future__ import annotations

from typing import Any


def connection_manager(admin: Any) -> Any:
    """The connection manager of a kafka-python ``KafkaAdminClient``: ``send(request,
    node_id=...)`` to one chosen broker and ``run(coroutine)`` on the client's I/O thread.

    kafka-python 3.0.12 has no public way to send one request to one chosen broker: its
    public admin calls pick the broker themselves (``describe_metadata_quorum`` asks the
    least loaded one, which is what a cut-off or paused node must not answer), and
    ``list_partition_offsets`` asks leaders only, never a follower as a debugging replica.
    The package exports no lower-level client (``kafka.__all__``), and the admin client's
    own methods use this attribute, so it is read here, in this one place."""
    return admin._manager


def close_producer(producer: Any, timeout: float) -> str | None:
    """Close ``producer`` within about ``timeout`` s; None when it closed, otherwise what
    went wrong (one line, for the run's events)."""
    from kafka.errors import KafkaError

    try:
        producer.close(timeout=timeout)
    except KafkaError as exc:
        gave_up = f"producer close gave up after {timeout:.0f} s: {type(exc).__name__}: {exc}"
        return f"{gave_up}; {_force_close(producer)}"
    return None


FORCED_CLOSE_S = 5.0  # the second close: the sender's run loop ends, the client closes


def _force_close(producer: Any) -> str:
    """Stop ``producer``'s sender without sending what is pending, then close it; what
    became of it, as words for ``close_producer``'s line."""
    from kafka.errors import KafkaError

    # no public API: close(timeout=0) flushes first and raises as the first close did;
    # force_close is only on the sender thread, an attribute kafka-python does not document
    sender = getattr(producer, "_sender", None)
    if not callable(getattr(sender, "force_close", None)):
        return "its sender thread is left to end with the process (no force_close)"
    sender.force_close()
    try:
        producer.close(timeout=FORCED_CLOSE_S)
    except KafkaError as exc:
        return f"the forced close failed as well: {type(exc).__name__}: {exc}"
    return "pending records dropped and the sender stopped"

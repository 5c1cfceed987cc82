"""A correction of kafka-python's idempotent producer, installed before the suite builds one.

kafka-python 3.0.12 (and its main branch) resets an idempotent producer's id when a batch
that was already sent expires (its delivery timeout passed while it was retried, e.g. on
``NotEnoughReplicas`` with two replicas down), exactly as the Java client does. Java then
returns to ``UNINITIALIZED`` and asks for a new producer id. kafka-python stays ``READY``
without one: its sender waits for an id that nobody asks for, every later send stays
unanswered for good and no delivery timeout fires, because the sender never reaches its
expiry check again. A soak at the plan's shape hit this after a composed fault kept two
replicas of some partitions down past the delivery timeout: acknowledgements stopped for
the rest of the run.

``install`` wraps ``TransactionManager.reset_producer_id``: after the reset, an idempotent
(non-transactional) producer left ready without an id asks for a fresh one through the
client's own KIP-360 path (``bump_producer_id_and_epoch``: an ``InitProducerId`` that, with
no id, allocates a new one). A kafka-python that fixes the reset itself leaves that state
behind, and the wrapper does nothing.

kafka-python also makes any failed ``InitProducerId`` fatal, even one that only timed out
(a loaded broker, a controller quorum that lost its majority). Kafka's advice for a
producer in a fatal error is a new producer: ``unusable`` says when the workload must build
one (``workloads.plain``).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

log = logging.getLogger(__name__)

_INSTALLED = "_kreplica_reinitialises"  # marks the wrapped method (install is idempotent)


def install() -> None:
    """Wrap kafka-python's ``reset_producer_id`` once (see the module's docstring)."""
    from kafka.producer.transaction_manager import TransactionManager

    original = TransactionManager.reset_producer_id
    if getattr(original, _INSTALLED, False):
        return

    @functools.wraps(original)
    def reset_producer_id(self: Any) -> None:
        original(self)
        if stranded(self):
            log.warning("kafka-python reset the idempotent producer's id and would never "
                        "ask for a new one; asking for it now")
            try:
                self.bump_producer_id_and_epoch()
            except Exception as exc:  # a broker before KIP-360 (Kafka 2.5): left as it was
                log.warning("could not ask for a new producer id: %s", exc)

    setattr(reset_producer_id, _INSTALLED, True)
    TransactionManager.reset_producer_id = reset_producer_id


def stranded(manager: Any) -> bool:
    """An idempotent producer ready to send but without a producer id: nothing would ask
    for one."""
    from kafka.producer.transaction_manager import TransactionState

    return (not manager.is_transactional() and not manager.has_producer_id()
            and getattr(manager, "_current_state", None) is TransactionState.READY)


def unusable(producer: Any) -> bool:
    """An idempotent (non-transactional) producer in a fatal error: every later send fails.
    kafka-python makes a failed ``InitProducerId`` fatal even when the request only timed
    out, so after a reset under load this happens; the caller replaces the producer."""
    manager = getattr(producer, "_transaction_manager", None)
    return (manager is not None and not manager.is_transactional()
            and manager.has_fatal_error())


def fatal_error(producer: Any) -> str:
    """What made ``producer`` unusable, for the event log."""
    manager = getattr(producer, "_transaction_manager", None)
    error = getattr(manager, "last_error", None)
    return f"{type(error).__name__}: {error}" if error is not None else "(not reported)"

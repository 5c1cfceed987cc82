"""A stand-in for kafka-python's transactional producer, for the unit tests of the txn
workloads' pure logic (the real producer runs in matrices/transactions.yaml)."""

from __future__ import annotations

from types import SimpleNamespace


class FakeFuture:
    def __init__(self, offset=None, error=None, done=True):
        self.is_done, self.exception = done, error
        self.value = SimpleNamespace(offset=offset)

    def succeeded(self):
        return self.is_done and self.exception is None

    def get(self, timeout=None):
        if self.exception is not None:
            raise self.exception
        return self.value


class FakeProducer:
    """Answers like kafka-python's transactional producer; ``fail`` names a step to raise
    (begin, send, offsets, commit, abort); ``calls`` lists the steps taken."""

    def __init__(self, fail=None):
        self.fail, self.calls, self.offset, self.offsets = fail, [], 0, None

    def _step(self, name):
        self.calls.append(name)
        if self.fail == name:
            raise RuntimeError(f"{name} failed")

    def begin_transaction(self):
        self._step("begin")

    def send(self, topic, value, partition):
        self._step("send")
        self.offset += 1
        return FakeFuture(self.offset)

    def send_offsets_to_transaction(self, offsets, group):
        self._step("offsets")
        self.offsets = offsets

    def commit_transaction(self):
        self._step("commit")

    def abort_transaction(self):
        self._step("abort")

    def close(self, timeout=None):
        """kafka-python's close; ``fail="close"`` times out as a flush stuck on a dead
        coordinator does (``KafkaTimeoutError``)."""
        self.calls.append("close")
        if self.fail == "close":
            from kafka.errors import KafkaTimeoutError

            raise KafkaTimeoutError("Timeout waiting for future")

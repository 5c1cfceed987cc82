"""A Connect task MirrorMaker 2 killed for good: read from its log, and restarted by the
mirror scenario during the drain (the CI failure of an exactly-once hard-kill case: the
restarted source task's commit failed with InvalidTxnStateException and stayed down)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from pytest_kreplica.cluster.base import NodeState
from pytest_kreplica.cluster.mirrormaker.tasks import killed_since, killed_tasks
from pytest_kreplica.scenarios import mirror

RUNTIME = "org.apache.kafka.connect.runtime"
TASK = "[MirrorSourceConnector|task-0]"
KILLED_LOG = "\n".join([
    f"[2026-11-28 10:20:01,100] INFO {TASK} committing ({RUNTIME}.ExactlyOnceWorkerSourceTask:300)",
    f"[2026-11-28 10:20:01,200] ERROR {TASK} ExactlyOnceWorkerSourceTask"
    "{id=MirrorSourceConnector-0} Task threw an uncaught and unrecoverable exception. Task is "
    f"being killed and will not recover until manually restarted ({RUNTIME}.WorkerTask:234)",
    "org.apache.kafka.connect.errors.ConnectException: Failed to commit producer transaction",
    f"\tat {RUNTIME}.ExactlyOnceWorkerSourceTask.commitTransaction(ExactlyOnceWorker"
    "SourceTask.java:312)",
    f"\tat {RUNTIME}.WorkerTask.run(WorkerTask.java:280)",
    "\t... 5 more",
    "Caused by: org.apache.kafka.common.errors.InvalidTxnStateException: The producer "
    "attempted a transactional operation in an invalid state.",
    f"[2026-11-28 10:20:01,300] INFO {TASK} stopping ({RUNTIME}.WorkerTask:250)",
]) + "\n"


def test_a_killed_task_is_named_with_its_root_cause():
    assert killed_tasks(KILLED_LOG) == [
        "MirrorSourceConnector-0: InvalidTxnStateException: The producer attempted a "
        "transactional operation in an invalid state."]


def test_a_killed_task_without_a_cause_keeps_its_first_exception():
    text = "\n".join(KILLED_LOG.splitlines()[1:3]) + "\n[2026-11-28] INFO next\n"
    assert killed_tasks(text) == [
        "MirrorSourceConnector-0: ConnectException: Failed to commit producer transaction"]


def test_errors_that_kill_no_task_are_not_reported():
    text = ("[2026-11-28 10:20:01,200] ERROR [MirrorSourceConnector|task-0] Failed to "
            "flush offsets (org.apache.kafka.connect.runtime.WorkerSourceTask:99)\n"
            "org.apache.kafka.common.errors.TimeoutException: Timeout expired\n")
    assert killed_tasks(text) == []


def test_only_the_last_launch_counts(tmp_path):
    log_file = tmp_path / "mirror-maker.log"
    log_file.write_text(KILLED_LOG)
    restart_at = log_file.stat().st_size
    with open(log_file, "a") as f:
        f.write("\n=== kreplica: starting MirrorMaker 2 at 10:21:00 ===\n[...] INFO up\n")
    assert len(killed_since(log_file, 0)) == 1
    assert killed_since(log_file, restart_at) == []
    assert killed_since(tmp_path / "absent.log", 0) == []


class _MirrorMaker:
    """A MirrorMaker 2 whose launches kill a task ``kills`` times (pure logic only)."""

    def __init__(self, kills: int):
        self.kills, self.restarts = kills, 0
        self.state = NodeState.RUNNING

    def killed_tasks(self) -> list[str]:
        return ["MirrorSourceConnector-0: InvalidTxnStateException"] if self.kills else []

    def restart(self) -> None:
        self.restarts += 1
        self.kills -= 1


def _run(mm: _MirrorMaker, looks: int) -> tuple[SimpleNamespace, list[tuple[str, str]]]:
    """Let the watcher look ``looks`` times, then end the drain."""
    events: list[tuple[str, str]] = []
    stop = threading.Event()
    ctx = SimpleNamespace(stop=stop, extra={}, writer=SimpleNamespace(
        event=lambda kind, **kw: events.append((kind, kw["detail"]))))
    calls = iter(range(looks))
    stop.wait = lambda _t: next(calls, None) is None  # a look per wait, then the drain ends
    mirror.restart_killed_tasks(ctx, mm, look_every=0)
    return ctx, events


def test_a_killed_task_is_restarted_once_and_reported():
    mm = _MirrorMaker(kills=1)
    ctx, events = _run(mm, looks=5)
    assert mm.restarts == 1
    assert [kind for kind, _ in events] == ["task-failed", "restart"]
    assert ctx.extra["mirror_killed_tasks"] == [
        "MirrorSourceConnector-0: InvalidTxnStateException"]
    assert ctx.extra["notes"] == ["MirrorMaker 2 killed a task for good (see its task-failed "
                                  "and restart events): MirrorSourceConnector-0: "
                                  "InvalidTxnStateException"]


def test_restarts_are_bounded_and_every_kill_is_reported():
    mm = _MirrorMaker(kills=10)
    ctx, events = _run(mm, looks=50)
    assert mm.restarts == mirror.KILLED_TASK_RESTARTS
    assert len(ctx.extra["mirror_killed_tasks"]) == mirror.KILLED_TASK_RESTARTS + 1
    assert [kind for kind, _ in events].count("restart") == mirror.KILLED_TASK_RESTARTS


def test_a_healthy_mirror_maker_is_left_alone():
    mm = _MirrorMaker(kills=0)
    ctx, events = _run(mm, looks=5)
    assert (mm.restarts, events, ctx.extra["mirror_killed_tasks"]) == (0, [], [])
    assert "notes" not in ctx.extra

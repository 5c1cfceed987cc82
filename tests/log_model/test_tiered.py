"""The log model's tiered profile against a real 3-node cluster with the remote tier (Kafka's
LocalTieredStorage): the CI size (a bounded run in which the broker is seen uploading,
deleting locally and serving reads from the remote tier), the soak size (``-m soak``), and a
planted violation (a remote segment deleted by hand) that the machine must find and shrink
to a short replayable program (``-m soak``, like the other teeth)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis.stateful import precondition, rule

from pytest_kreplica.logmodel.machine import WEIGHTS, recorded
from pytest_kreplica.logmodel.model import ModelMismatch
from pytest_kreplica.logmodel.replay import load_replay
from pytest_kreplica.logmodel.runner import (
    DATABASE_DIR,
    ENV_EXAMPLES,
    PROFILES,
    replay_program,
    run_log_model,
    verify_topics,
)
from pytest_kreplica.logmodel.tiered import TIERED_WEIGHTS, TieredLogMachine
from tests.log_model import tiered_finding

pytestmark = pytest.mark.log_model
DISRUPTIONS = ("restart_node", "move_leader")
HANDFUL = 5  # steps of a shrunk program, create_topic included
FAST = {"read_timeout_s": 2.0, "retry_s": 3.0}


def _run(cluster, run_dir, output, profile, machine, kreplica_options=None):
    """Run ``profile``; with ``kreplica_options``, the replica-log verifier (Spark) over every
    topic afterwards (the soak's: in CI, Spark's start alone would double the test)."""
    started = time.monotonic()
    run = run_log_model(cluster, run_dir, profile=profile, machine=machine,
                        topic_prefix=f"logmodel-{profile}", database_dir=output / DATABASE_DIR)
    print(f"log model {profile}: {run.examples} examples in {run.rounds} round(s), "
          f"{run.steps} steps in "
          f"{run.seconds:.1f} s (total {time.monotonic() - started:.1f} s); rules {run.rules}; "
          f"observed {run.observed}")
    if kreplica_options is not None:
        verdict = verify_topics(cluster, run.topics, run_dir, kreplica_options.spark_master)
        assert verdict.valid, verdict.summary()
    for topic in run.topics:
        cluster.delete_topics([topic])
    return run


@pytest.mark.ci
def test_tiered_log_model_ci(kreplica_log_tiered_cluster, kreplica_log_dir, kreplica_output):
    run = _run(kreplica_log_tiered_cluster, kreplica_log_dir, kreplica_output, "tiered-ci",
               TieredLogMachine)
    wanted = int(os.environ.get(ENV_EXAMPLES) or PROFILES["tiered-ci"]["max_examples"])
    assert run.examples >= wanted
    # the tiering rules are drawn: at least one of them ran. Which ones six examples reach is
    # Hypothesis' choice (a rule with a precondition may stay unused), so asking for a given
    # one would be a flaky check; the soak test wants every rule
    assert set(TIERED_WEIGHTS) & set(run.rules), f"rules run: {run.rules}"
    # every example tiered its first batch (create_topic waits for the upload)
    assert run.observed.get("tiered waits met", 0) >= run.examples, run.observed
    # the broker did tier: uploads reached the store, local segments were deleted after
    # them, and reads below the local log start were served by the remote tier
    assert run.observed.get("remote segments seen", 0) > 0, run.observed
    assert run.observed.get("local deletions seen", 0) > 0, run.observed
    assert run.observed.get("remote reads", 0) > 0, run.observed


@pytest.mark.soak
def test_tiered_log_model_soak(kreplica_log_tiered_cluster, kreplica_log_dir, kreplica_output,
                               kreplica_options):
    run = _run(kreplica_log_tiered_cluster, kreplica_log_dir, kreplica_output, "tiered-soak",
               TieredLogMachine, kreplica_options)
    never = (set(WEIGHTS) | set(TIERED_WEIGHTS)) - set(run.rules)
    assert never == set(), f"never ran: {never}; rules run: {run.rules}"
    assert run.observed.get("remote reads", 0) > 0, run.observed


class DeletedRemoteSegment(TieredLogMachine):
    """Someone deletes a remote segment's files behind the broker's back (an object store
    that lost an object the remote log metadata still lists). The rule tiers first (a roll
    and a bounded wait) so that a segment below the local log start exists to delete: the
    fault always acts, except under a hotset that keeps every segment local."""

    FAULT = True

    @precondition(lambda self: self.model.high_watermark > self.model.log_start)
    @rule()
    @recorded
    def delete_remote_segment(self) -> None:
        view = self.tier_now()
        span = view.remote_only
        doomed = [s for s in view.segments if span and s.start <= span[1] and s.end >= span[0]]
        if self.FAULT and doomed:
            segment = doomed[0]
            for path in segment.path.parent.glob(segment.path.stem + ".*"):
                path.unlink()


class DeletedRemoteSegmentClean(DeletedRemoteSegment):
    FAULT = False


@pytest.mark.soak
def test_deleted_remote_segment_is_caught_and_replayable(kreplica_log_tiered_cluster,
                                                         kreplica_log_dir, tmp_path):
    cluster = kreplica_log_tiered_cluster
    with pytest.raises(BaseException) as caught:
        run_log_model(cluster, kreplica_log_dir, profile="tiered-teeth",
                      machine=DeletedRemoteSegment, topic_prefix="teeth-remote", **FAST)
    errors = getattr(caught.value, "exceptions", [caught.value])
    assert any(isinstance(e, ModelMismatch) and "remote tier" in str(e) for e in errors), \
        caught.value
    steps, loaded = load_replay(kreplica_log_dir / "replay.py")
    names = [name for name, _ in steps]
    assert loaded is DeletedRemoteSegment
    assert "delete_remote_segment" in names, names
    assert len(steps) <= HANDFUL, f"shrunk to {len(steps)} steps: {names}"
    # the replay file reproduces it, in this process and through pytest --kreplica-replay
    # (whose fixture starts the tiered cluster the machine needs); without the fault it passes
    with pytest.raises(ModelMismatch, match="expected in the remote tier"):
        replay_program(cluster, tmp_path / "again", steps, DeletedRemoteSegment, **FAST)
    replay_program(cluster, tmp_path / "clean", steps, DeletedRemoteSegmentClean, **FAST)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--kreplica-replay",
         str(kreplica_log_dir / "replay.py"), "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
         "--kreplica-output", str(tmp_path / "replay-output")],
        capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[2])
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-2000:]
    assert "ModelMismatch" in out.stdout and "1 failed" in out.stdout, out.stdout[-3000:]


@pytest.mark.soak
def test_deleted_remote_segment_clean_control_passes(kreplica_log_tiered_cluster,
                                                     kreplica_log_dir):
    run = run_log_model(kreplica_log_tiered_cluster, kreplica_log_dir, profile="tiered-teeth",
                        machine=DeletedRemoteSegmentClean, topic_prefix="teeth-remote-clean",
                        **FAST)
    assert run.examples >= 10


@pytest.mark.ci
def test_list_offsets_by_time_on_a_tiered_partition_skips_remote_records(
        kreplica_log_tiered_cluster, tmp_path):
    """The tiered soak's finding, pinned: the remote tier's search by time answers from the
    first remote segment whose largest timestamp reaches the time (here one that straddles
    the log start, whose qualifying record lies below it), finds nothing at or past the log
    start there, and falls back to the local log: Kafka answers a later offset than the
    earliest. The tiered machine must accept that answer here
    (``TieredLogMachine.time_answers``), and Kafka must answer it, none (the local finding,
    while a local copy of the straddling segment remains) or the protocol's earliest (when
    the remote search does not start at the straddling segment, as on a loaded machine);
    any other offset is a new behaviour."""
    # (log start, earliest, Kafka's, what the tiered machine accepts)
    seen: list[tuple[int, int | None, int | None, tuple[int | None, ...]]] = []

    class TimeAnswers(TieredLogMachine):
        def offsets_for_times(self, at: int) -> None:
            timestamp = self.base_ms + at
            seen.append((self.model.log_start, self.model.offset_for_time(timestamp),
                         self.system.list_offset(self.topic, timestamp),
                         self.time_answers(timestamp)))
            TieredLogMachine.offsets_for_times(self, at=at)

    replay_program(kreplica_log_tiered_cluster, tmp_path / "replay", tiered_finding.PROGRAM,
                   TimeAnswers)
    log_start, earliest, answer, accepted = seen[-1]
    assert (log_start, earliest) == (tiered_finding.LOG_START, tiered_finding.EARLIEST), seen
    assert answer in (tiered_finding.KAFKA_ANSWER, None, tiered_finding.EARLIEST), seen
    if answer == tiered_finding.KAFKA_ANSWER:  # the finding itself: the allowance covers it
        assert accepted == (tiered_finding.EARLIEST, None, tiered_finding.KAFKA_ANSWER), seen

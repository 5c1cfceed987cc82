"""The log model has teeth: a broker-side fault the model does not expect makes the machine
fail and shrink to a handful of steps, the replay file reproduces it, and the same machine
without the fault passes (so the failure is the fault's, not the harness's).

Faults: an out-of-band DeleteRecords (the log start moves without the model knowing), and
the leader's newest segment file cut short behind the broker's back (its last batch can no
longer be read, and ListOffsets by time may fail on it). Short read and retry bounds keep
each failing example to a few seconds, so the shrink fits its budget.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from pytest_kreplica.logmodel.machine import LogMachine, recorded
from pytest_kreplica.logmodel.model import ModelMismatch
from pytest_kreplica.logmodel.replay import load_replay
from pytest_kreplica.logmodel.runner import replay_program, run_log_model
from pytest_kreplica.logmodel.system import SystemFailure

# opt-in (``-m soak``): each search shrinks against a real cluster for minutes, and a
# CI-sized random search did not always reach the planted fault (docs/log-model.md)
pytestmark = [pytest.mark.log_model, pytest.mark.soak]

HANDFUL = 5  # steps of a shrunk program, create_topic included
FAST = {"read_timeout_s": 2.0, "retry_s": 3.0}  # a failing example costs seconds, not 25 s


class OutOfBandDelete(LogMachine):
    """Someone else deletes records: DeleteRecords the model is not told about."""

    FAULT = True

    @precondition(lambda self: self.model.high_watermark > self.model.log_start)
    @rule(position=st.integers(0, 100))
    @recorded
    def out_of_band_delete(self, position: int) -> None:
        offset = min(self._offset_at(position), self.model.high_watermark)
        if self.FAULT and offset > self.model.log_start:
            self.system.delete_records(self.topic, offset)


class OutOfBandDeleteClean(OutOfBandDelete):
    FAULT = False


class TruncatedSegment(LogMachine):
    """The leader's newest non-empty segment file loses its last bytes behind the broker's
    back (a disk that dropped a write the broker had counted)."""

    FAULT = True

    @precondition(lambda self: self.model.high_watermark > self.model.log_start)
    @rule(cut=st.integers(1, 64))
    @recorded
    def truncate_segment(self, cut: int) -> None:
        leader, _ = self.system.replicas(self.topic)
        folder = Path(self.system.cluster.node(leader).log_dir) / f"{self.topic}-0"
        segments = [p for p in folder.glob("*.log") if p.stat().st_size > 0]
        if self.FAULT and segments:
            segment = max(segments, key=lambda p: int(p.stem))
            with open(segment, "r+b") as fh:
                fh.truncate(segment.stat().st_size - min(cut, segment.stat().st_size))


class TruncatedSegmentClean(TruncatedSegment):
    FAULT = False


def _shrunk_failure(cluster, run_dir: Path, machine: type, fault_rule: str,
                    caught_as: tuple[type, ...] = (ModelMismatch,), **bounds):
    with pytest.raises(BaseException) as caught:
        run_log_model(cluster, run_dir, profile="teeth", machine=machine,
                      topic_prefix=f"teeth-{fault_rule}", **bounds)
    errors = getattr(caught.value, "exceptions", [caught.value])
    assert any(isinstance(e, caught_as) for e in errors), caught.value
    steps, loaded = load_replay(run_dir / "replay.py")
    names = [name for name, _ in steps]
    assert loaded is machine
    assert fault_rule in names, names
    assert len(steps) <= HANDFUL, f"shrunk to {len(steps)} steps: {names}"
    return steps


def test_out_of_band_delete_records_is_caught_and_replayable(kreplica_log_cluster,
                                                             kreplica_log_dir, tmp_path):
    steps = _shrunk_failure(kreplica_log_cluster, kreplica_log_dir, OutOfBandDelete,
                            "out_of_band_delete")
    # the replay file reproduces it, in this process and through pytest --kreplica-replay
    with pytest.raises(ModelMismatch, match="log start offset expected"):
        replay_program(kreplica_log_cluster, tmp_path / "again", steps, OutOfBandDelete)
    replay_program(kreplica_log_cluster, tmp_path / "clean", steps, OutOfBandDeleteClean)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--kreplica-replay",
         str(kreplica_log_dir / "replay.py"), "-p", "no:xdist", "-q", "-p", "no:cacheprovider",
         "--kreplica-output", str(tmp_path / "replay-output")],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-2000:]
    assert "ModelMismatch" in out.stdout and "1 failed" in out.stdout, out.stdout[-3000:]


def test_out_of_band_delete_clean_control_passes(kreplica_log_cluster, kreplica_log_dir):
    run = run_log_model(kreplica_log_cluster, kreplica_log_dir, profile="teeth",
                        machine=OutOfBandDeleteClean, topic_prefix="teeth-clean-delete")
    assert run.examples >= 10


def test_truncated_segment_is_caught_and_replayable(kreplica_log_cluster, kreplica_log_dir,
                                                    tmp_path):
    # a read that comes back short is a mismatch; a ListOffsets the broker cannot answer
    # (it reads the cut segment to find a time) is a system failure: both are the system
    # disagreeing with the model, and either may be the shrunk program's end
    caught_as = (ModelMismatch, SystemFailure)
    steps = _shrunk_failure(kreplica_log_cluster, kreplica_log_dir, TruncatedSegment,
                            "truncate_segment", caught_as, **FAST)
    with pytest.raises(caught_as):
        replay_program(kreplica_log_cluster, tmp_path / "again", steps, TruncatedSegment,
                       **FAST)
    replay_program(kreplica_log_cluster, tmp_path / "clean", steps, TruncatedSegmentClean,
                   **FAST)


def test_truncated_segment_clean_control_passes(kreplica_log_cluster, kreplica_log_dir):
    run = run_log_model(kreplica_log_cluster, kreplica_log_dir, profile="teeth",
                        machine=TruncatedSegmentClean, topic_prefix="teeth-clean-trunc", **FAST)
    assert run.examples >= 10

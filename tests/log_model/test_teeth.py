"""The log model has teeth: a broker-side fault the model does not expect makes the machine
fail and shrink to a handful of steps, the replay file reproduces it, and the same machine
without the fault passes (so the failure is the fault's, not the harness's).

Fault: an out-of-band DeleteRecords (the log start moves without the model knowing). A
segment file truncated behind the broker's back is not a test yet: measured, its failure did
not shrink within Hypothesis's five-minute shrink budget and its replay ended in a client
time-out rather than a model mismatch (docs/log-model.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import rule

from pytest_kreplica.logmodel.machine import LogMachine, recorded
from pytest_kreplica.logmodel.model import ModelMismatch
from pytest_kreplica.logmodel.replay import load_replay
from pytest_kreplica.logmodel.runner import replay_program, run_log_model

# opt-in (``-m soak``): each search shrinks against a real cluster for minutes, and a
# CI-sized random search did not always reach the planted fault (docs/log-model.md)
pytestmark = [pytest.mark.log_model, pytest.mark.soak]

HANDFUL = 5  # steps of a shrunk program, create_topic included


class OutOfBandDelete(LogMachine):
    """Someone else deletes records: DeleteRecords the model is not told about."""

    FAULT = True

    @rule(position=st.integers(0, 100))
    @recorded
    def out_of_band_delete(self, position: int) -> None:
        offset = min(self._offset_at(position), self.model.high_watermark)
        if self.FAULT and offset > self.model.log_start:
            self.system.delete_records(self.topic, offset)


class OutOfBandDeleteClean(OutOfBandDelete):
    FAULT = False


def _shrunk_failure(cluster, run_dir: Path, machine: type, fault_rule: str):
    with pytest.raises(BaseException) as caught:
        run_log_model(cluster, run_dir, profile="teeth", machine=machine,
                      topic_prefix=f"teeth-{fault_rule}")
    errors = getattr(caught.value, "exceptions", [caught.value])
    assert any(isinstance(e, ModelMismatch) for e in errors), caught.value
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

"""Test case C.6: every selected case of scenario ``mirror`` (matrices/mirror-maker-failure.yaml)
runs a source and a target cluster joined by MirrorMaker 2 that the nemesis fails during the
produce. The mirrored history must be valid (at-least-once: duplicates after a hard failure
are counted and shown, not failures), both clusters' replicas must agree, and every planned
fault must have struck and been followed by mirroring moving again. Select subsets by
marker, e.g. ``pytest tests/system -m "mirror_maker_failure and failure_hard"``."""

import json
import shutil

import pytest


@pytest.fixture
def mirror_run(kreplica_options, kreplica_pool, kreplica_output, kreplica_record):
    from pytest_kreplica.mirror import acquire_pair, run_mirror_case

    def run(case, target_version=None):
        run_dir = kreplica_output / case.case_id
        if run_dir.exists():  # histories are append-only: never mix two runs
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        row = {"case_id": case.case_id, "verdict": "error", "run_dir": str(run_dir)}
        try:
            source, target = acquire_pair(kreplica_pool, case, target_version)
            result = run_mirror_case(case, source, target, run_dir,
                                     spark_master=kreplica_options.spark_master,
                                     replica_check=kreplica_options.replica_check)
            row = result.summary()
            return result
        finally:
            kreplica_record(row)

    return run


@pytest.mark.kreplica_scenario("mirror")
def test_mirror_maker_failure(kreplica_case, mirror_run):
    result = mirror_run(kreplica_case, kreplica_case.target_kafka_version)
    faults = result.extra.get("mirror_faults", [])
    assert len(faults) == kreplica_case.failures, (
        f"expected {kreplica_case.failures} MirrorMaker 2 faults, seen {faults}; "
        f"run directory {result.run_dir}")
    expected_state = {"clean": "stopped", "hard": "stopped", "soft": "paused"}
    for fault in faults:
        assert fault["error"] is None and fault["recovered_ns"] is not None, (
            f"expected fault #{fault['index']} to strike and mirroring to move again, seen "
            f"{json.dumps(fault)}; log {result.log_files['mirror-maker']}")
        assert fault["state_after_strike"] == expected_state[kreplica_case.failure], fault
    kinds = [json.loads(line)["kind"] for line in
             (result.run_dir / "events.jsonl").read_text().splitlines()
             if json.loads(line)["role"] == "mirror-maker"]
    strike = {"clean": "terminate", "hard": "kill", "soft": "pause"}[kreplica_case.failure]
    assert kinds.count(strike) == kreplica_case.failures, kinds
    assert kinds.count("recovered") == kreplica_case.failures, kinds
    result.assert_valid()

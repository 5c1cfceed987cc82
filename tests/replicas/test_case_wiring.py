"""The case runner's replica check carries verify-logs' verdict (pure logic)."""

from __future__ import annotations

from pathlib import Path

from pytest_kreplica.scenarios.runner import ReplicaCheck


def logs(valid: bool, **counts) -> dict:
    base = {"corrupt_batches": 0, "missing_batches": 0, "divergent_batches": 0,
            "segment_mismatches": 0}
    base.update(counts)
    first = [] if valid else [{"topic": "t", "partition": 0, "offset": 42, "kind": "corrupt",
                               "replicas": {"1": 7, "2": 7, "3": None}}]
    examples = {"corrupt_batches": [{"topic": "t", "partition": 0, "offset": 42, "node": 2,
                                     "file": "replicas/2/t-0/00000000000000000000.log",
                                     "position": 1234, "problem": "crc mismatch"}]
                if not valid else []}
    return {"valid": valid, "counts": base, "first_divergence": first, "examples": examples,
            "at_rest": True}


def test_batch_level_verdict_decides_validity():
    informative = [{"topic": "t", "partition": 0, "base_offset": 0, "sha256": {}}]
    assert ReplicaCheck(True, 6, informative, logs=logs(True, segment_mismatches=1)).valid
    assert not ReplicaCheck(True, 6, [], logs=logs(False, corrupt_batches=1)).valid
    assert ReplicaCheck(True, 0, [], skipped="off", logs=logs(False)).valid


def test_failure_lines_name_offset_replicas_and_paths():
    check = ReplicaCheck(True, 6, [], logs=logs(False, corrupt_batches=1))
    text = "\n".join(check.failure_lines(Path("runs/case-1")))
    assert "seen corrupt_batches 1, missing_batches 0, divergent_batches 0" in text
    assert "first divergence t-0 at offset 42 (corrupt)" in text
    assert '"3": null' in text
    assert "replicas/2/t-0/00000000000000000000.log" in text
    assert "kreplica verify-logs runs/case-1" in text
    d = check.as_dict()
    assert d["valid"] is False and d["counts"]["corrupt_batches"] == 1


def test_interim_form_is_unchanged():
    check = ReplicaCheck(True, 3, [{"segment": "x.log"}])
    assert not check.valid
    assert "expected equal closed segments" in check.failure_lines(Path("r"))[0]

"""The broker's one-time artefacts: the archive build asks for the format template from
inside its own lock (its one-node cluster formats storage), and neither a made nor a failing
template can make it wait on itself. The JVM steps are replaced by fakes here; the real ones
run in tests/integration/test_first_run.py."""

from __future__ import annotations

import time

import pytest

from pytest_kreplica import once
from pytest_kreplica.cluster.kafka import prepared
from pytest_kreplica.cluster.kafka.distribution import Distribution


@pytest.fixture
def dist(tmp_path):
    (tmp_path / "broker").mkdir()
    return Distribution(version="9.9.9", java="java", home=tmp_path, classpaths={"broker": ""})


@pytest.fixture(autouse=True)
def quiet():
    previous = once.set_say(lambda line: None)
    yield
    once.set_say(previous)


def no_cluster(*args, **kwargs):
    raise AssertionError("the faked archive build starts no cluster")


def _archive_build_that_formats(seen: list):
    def build(dist, archive, timeout, new_cluster):
        seen.append(prepared.ensure_format_template(dist))  # what the cluster start does
        archive.write_bytes(b"jsa")
    return build


@pytest.mark.parametrize("template_works", [True, False])
def test_archive_build_asks_for_the_template_without_waiting_on_itself(
        dist, monkeypatch, template_works):
    def make_template(dist, template, timeout):
        if not template_works:
            raise RuntimeError("StorageTool exited 1")
        template.parent.mkdir(parents=True, exist_ok=True)
        template.write_bytes(b"checkpoint")

    seen: list = []
    monkeypatch.setattr(prepared, "_make_template", make_template)
    monkeypatch.setattr(prepared, "_build_archive", _archive_build_that_formats(seen))
    started = time.monotonic()
    assert prepared.ensure_class_data_archive(dist, no_cluster) is True
    assert time.monotonic() - started < 5.0
    assert dist.archive_path.read_bytes() == b"jsa"
    if template_works:
        assert seen == [prepared.template_path(dist)]
    else:
        assert seen == [None]  # the cluster formats with the real tool instead
        failed = prepared.template_path(dist).with_name("template.failed")
        assert "StorageTool exited 1" in failed.read_text()


def test_a_failed_archive_is_marked_and_not_retried(dist, monkeypatch):
    calls = []

    def broken(dist, archive, timeout, new_cluster):
        calls.append(1)
        raise RuntimeError("waited 120 s for 1 unfenced brokers")

    monkeypatch.setattr(prepared, "_build_archive", broken)
    assert prepared.ensure_class_data_archive(dist, no_cluster) is False
    assert prepared.ensure_class_data_archive(dist, no_cluster) is False
    assert len(calls) == 1
    assert "unfenced" in dist.archive_path.with_suffix(".failed").read_text()

"""The backend registry: built-ins, a third-party backend found through its entry point, and
one clear line naming the allowed values for an unknown name (no broker is started)."""

from __future__ import annotations

from importlib import metadata

import pytest

from pytest_kreplica.cluster import (
    BACKENDS,
    ClusterSpec,
    backend_class,
    backend_names,
    create_cluster,
)
from pytest_kreplica.cluster.process.cluster import ProcessCluster
from pytest_kreplica.errors import InputError


class ThirdPartyCluster:
    """Stands for a backend another package ships (only its constructor is called)."""

    def __init__(self, spec, workdir):
        self.spec, self.workdir = spec, workdir


@pytest.fixture
def third_party(monkeypatch):
    entry = metadata.EntryPoint(name="k8s", value=f"{__name__}:ThirdPartyCluster",
                                group="kreplica.backends")
    hijack = metadata.EntryPoint(name="process", value=f"{__name__}:ThirdPartyCluster",
                                 group="kreplica.backends")
    real = metadata.entry_points

    def entry_points(**params):
        if params.get("group") == "kreplica.backends":
            return metadata.EntryPoints([entry, hijack])
        return real(**params)

    monkeypatch.setattr(metadata, "entry_points", entry_points)


def test_built_ins_are_process_docker_and_external():
    assert list(BACKENDS) == ["process", "docker", "external"]
    assert backend_class("process") is ProcessCluster


def test_a_third_party_backend_is_found_through_its_entry_point(third_party, tmp_path):
    assert backend_names() == ("process", "docker", "external", "k8s")
    cluster = create_cluster(ClusterSpec(brokers=3, backend="k8s"), tmp_path)
    assert isinstance(cluster, ThirdPartyCluster) and cluster.workdir == tmp_path
    assert backend_class("process") is ProcessCluster  # a plugin cannot replace a built-in


def test_unknown_backend_names_the_allowed_values(tmp_path):
    with pytest.raises(InputError,
                       match=r"backend 'k9s' is unknown; allowed: process, docker, external$"):
        create_cluster(ClusterSpec(brokers=3, backend="k9s"), tmp_path)

"""The node-facility registry without a cluster: every failure names known facilities, the
spec's names are checked per backend with one line, and the hooks of a cluster's attached
facilities fold in registry order (voters, properties, environment, container parts, format
arguments) and close last-first, each close running even when another fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_kreplica.cluster.base import Node
from pytest_kreplica.cluster.facilities import (
    FACILITIES,
    Attached,
    Attachment,
    ContainerParts,
    Facility,
    Site,
    check,
    dynamic_quorum,
    key_suffix,
)
from pytest_kreplica.errors import InputError
from pytest_kreplica.faults.registry import FAILURES, RANDOM, RANDOM_FAILURES, facilities_needed


def test_every_failure_names_registered_facilities_its_backends_offer():
    for failure in FAILURES.values():
        for name in failure.facilities:
            assert name in FACILITIES, f"{failure.name} names unknown facility {name!r}"
            assert set(failure.backends or ()) <= set(FACILITIES[name].backends), failure.name
    # every facility serves a failure (the remote tier also serves the tiered dimension)
    assert {n for f in FAILURES.values() for n in f.facilities} == set(FACILITIES)


def test_a_case_needs_what_its_failure_needs_and_random_what_it_may_draw():
    assert facilities_needed("slow_link") == {"link_proxy"}
    assert facilities_needed("none") == frozenset() == facilities_needed(None)
    drawn = frozenset().union(*(FAILURES[n].facilities for n in RANDOM_FAILURES))
    assert facilities_needed(RANDOM) == drawn


def test_unknown_or_unoffered_facilities_are_one_line():
    with pytest.raises(InputError) as err:
        check({"object_store"}, "process")
    assert "'object_store' is unknown; allowed: link_proxy" in str(err.value)
    with pytest.raises(InputError) as err:
        check({"dynamic_quorum"}, "docker")
    text = str(err.value)
    assert "\n" not in text and "needs the process backend" in text and "'docker'" in text
    assert [f.name for f in check({"lazy_fs", "link_proxy"}, "docker")] == ["link_proxy",
                                                                           "lazy_fs"]


def test_cluster_keys_follow_the_registry_order():
    assert key_suffix({"dynamic_quorum", "link_proxy", "fake_clock"}) == \
        "-links-clock-dynquorum"
    assert key_suffix(()) == ""


class Recording(Attachment):
    def __init__(self, tag: str, log: list[str], fail_close: bool = False):
        self.tag, self.log, self.fail_close = tag, log, fail_close
        self.handle = f"handle-{tag}"

    def voters(self, voters):
        return f"{voters}+{self.tag}"

    def node_properties(self, node_id, props):
        return {**props, self.tag: str(node_id)}

    def environment(self, node_id):
        return {f"ENV_{self.tag}": "1"}

    def container(self, node_id, home):
        return ContainerParts({"E": self.tag}, {f"/{self.tag}": {"bind": home}},
                              {f"{node_id}/tcp": ("127.0.0.1", 1)})

    def storage_tool_args(self):
        return [f"--{self.tag}"] if self.tag == "b" else None

    def close(self):
        self.log.append(self.tag)
        if self.fail_close:
            raise RuntimeError("cannot close")


def _facility(name: str, attach) -> Facility:
    return Facility(name=name, doc=name, key=name, backends=("process",), attach=attach)


def _site(tmp_path: Path) -> Site:
    node = Node(1, "127.0.0.1", 9000, 9001, tmp_path / "node-1" / "data",
                tmp_path / "node-1" / "server.log")
    return Site("process", tmp_path, "127.0.0.1", (node,))


def test_attached_hooks_fold_in_order_and_close_last_first(tmp_path):
    log: list[str] = []
    attached = Attached.start([_facility("a", lambda s: Recording("a", log, fail_close=True)),
                               _facility("b", lambda s: Recording("b", log))], _site(tmp_path))
    assert attached.handle("a") == "handle-a" and attached.handle("c") is None
    assert attached.voters("v") == "v+a+b"
    assert attached.node_properties(1, {"x": "y"}) == {"x": "y", "a": "1", "b": "1"}
    assert attached.environment(1) == {"ENV_a": "1", "ENV_b": "1"}
    parts = attached.container(1, "/k")
    assert parts.environment == {"E": "b"} and set(parts.volumes) == {"/a", "/b"}
    assert attached.storage_tool_args() == ["--b"]
    attached.close()  # a's close fails: b was closed first, and a's failure is only logged
    assert log == ["b", "a"] and attached.handle("a") is None


def test_an_attach_that_fails_closes_those_attached_before(tmp_path):
    log: list[str] = []

    def broken(site):
        raise RuntimeError("no proxy")

    with pytest.raises(RuntimeError, match="no proxy"):
        Attached.start([_facility("a", lambda s: Recording("a", log)),
                        _facility("z", broken)], _site(tmp_path))
    assert log == ["a"]


def test_without_facilities_nothing_is_added(tmp_path):
    attached = Attached()
    assert attached.voters("1@h:1") == "1@h:1" and attached.environment(1) == {}
    assert attached.storage_tool_args() is None and attached.describe() == {}


def test_a_dynamic_quorum_names_bootstrap_servers_and_the_initial_controllers(tmp_path):
    quorum = dynamic_quorum.FACILITY.attach(_site(tmp_path))
    assert quorum.voters("1@127.0.0.1:9001") == "127.0.0.1:9001"
    props = quorum.node_properties(1, {"node.id": "1", "controller.quorum.voters": "x"})
    assert list(props) == ["node.id", "controller.quorum.bootstrap.servers"]
    flag, initial = quorum.storage_tool_args()
    assert flag == "--initial-controllers" and initial.startswith("1@127.0.0.1:9001:")

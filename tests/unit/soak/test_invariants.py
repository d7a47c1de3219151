"""The soak's invariants (``cpuset_soak/invariants.py``) on hand-made kernel views: each
one finds what it is there for, and stays quiet on a correct node."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpuset_adapters import cgroupfs
from cpuset_core import CPUSet
from cpuset_soak import kernel
from cpuset_soak.invariants import empty_state, exclusive_owners, placements, state_matches
from cpuset_soak.model import BEST_EFFORT, INTEGER, PINNED, SHARED
from cpuset_soak.report import descriptor_growth
from tests.unit.soak.soak_fixtures import FOUR, TWO, enforced, node_with, pod, running


def nodes_of(cpus: CPUSet) -> CPUSet:
    return CPUSet([0])


def correct_node():  # type: ignore[no-untyped-def]
    node = node_with(FOUR, pod("db", running(INTEGER, "i1", 1)),
                     pod("io", running(PINNED, "p1"), pin="3"),
                     pod("web", running(SHARED, "s1"), running(BEST_EFFORT, "b1")))
    view = {"i1": enforced("0"), "p1": enforced("3"), "s1": enforced("1-2"),
            "b1": enforced("1-2")}
    return node, view


def test_a_correct_node_breaks_nothing() -> None:
    node, view = correct_node()
    assert exclusive_owners(node, view) == []
    assert placements(node, view, nodes_of, CPUSet([0])) == []


def test_two_integer_containers_on_one_cpu_are_found() -> None:
    node = node_with(TWO, pod("a", running(INTEGER, "i1", 1)), pod("b", running(INTEGER, "i2", 1)))
    found = exclusive_owners(node, {"i1": enforced("1"), "i2": enforced("1")})
    assert len(found) == 1
    assert "CPU(s) 1 enforced for two exclusive owners" in found[0]


def test_an_integer_container_on_a_pin_is_found_unless_its_runtime_refuses_the_move() -> None:
    node = node_with(TWO, pod("a", running(INTEGER, "i1", 1)),
                     pod("io", running(PINNED, "p1"), pin="1"))
    view = {"i1": enforced("1"), "p1": enforced("1")}
    assert len(exclusive_owners(node, view)) == 1
    node.pods["a"].containers["i1"].faulted = True
    assert exclusive_owners(node, view) == []


def test_overlapping_pins_and_unmanaged_containers_are_not_owners() -> None:
    node = node_with(TWO, pod("x", running(PINNED, "p1"), pin="0-1"),
                     pod("y", running(PINNED, "p2"), pin="1"),
                     pod("z", running(INTEGER, "i1", 1)))
    node.pods["z"].containers["i1"].unmanaged = True
    view = {"p1": enforced("0-1"), "p2": enforced("1"), "i1": enforced("0-1")}
    assert exclusive_owners(node, view) == []


def test_a_shared_container_off_the_pool_is_found() -> None:
    node, view = correct_node()
    view["s1"] = enforced("1-3")
    found = placements(node, view, nodes_of, CPUSet([0]))
    assert found == ["web/s1 (shared, s1): shared, expected 1-2 (mems 0), the kernel "
                     "enforces 1-3 (mems 0)"]


def test_a_pin_off_its_annotation_and_an_integer_container_of_the_wrong_size_are_found() -> None:
    node, view = correct_node()
    view["p1"] = enforced("2-3")
    view["i1"] = enforced("0-1")
    found = placements(node, view, nodes_of, CPUSet([0]))
    assert any("asked 1 exclusive CPU(s), the kernel enforces 0-1" in f for f in found)
    assert any("pinned to 3" in f for f in found)


def test_the_state_document_must_list_what_runs_on_the_cpus_the_kernel_enforces() -> None:
    node, view = correct_node()
    state = {"containers": [{"id": "i1", "cpus": "0"}, {"id": "p1", "cpus": "3"},
                            {"id": "s1", "cpus": "1-2"}, {"id": "gone", "cpus": "1-2"}]}
    found = state_matches(node, view, state)
    assert "inspect does not list running web/b1" in found[0]
    assert "inspect lists gone" in found[1]
    state["shared_pool"] = "1-3"
    assert "inspect says the shared pool is '1-3', the kernel runs every shared container on 1-2" \
        in state_matches(node, view, state)[-1]
    state["containers"][0]["cpus"] = "1"
    assert any("inspect says db/i1 (integer, i1) is on 1" in f
               for f in state_matches(node, view, state))


def test_an_empty_node_must_leave_the_plugin_with_nothing_held() -> None:
    node = node_with(TWO)
    assert empty_state(node, {"containers": [], "exclusive": {}, "pinned": {},
                              "draining": "", "shared_pool": "0-1"}) == []
    found = empty_state(node, {"containers": [{"subject": "default/a/b"}],
                               "exclusive": {"1": "x"}, "shared_pool": "0"})
    assert len(found) == 3


def test_a_container_whose_cpuset_someone_else_wrote_is_no_owner_until_the_node_settles() -> None:
    node = node_with(TWO, pod("a", running(INTEGER, "i1", 1)), pod("b", running(INTEGER, "i2", 1)))
    node.pods["a"].containers["i1"].tampered = True
    view = {"i1": enforced("0-1"), "i2": enforced("1")}
    assert exclusive_owners(node, view) == []
    node.settled()
    assert len(exclusive_owners(node, view)) == 1


def test_descriptors_held_at_the_end_beyond_the_fewest_seen_are_a_leak() -> None:
    assert descriptor_growth([(1, 100, 8), (2, 100, 9), (2, 100, 11)]) == []
    assert descriptor_growth([(1, 100, 8), (2, 100, 900), (2, 100, 901)]) == [
        "the plugin's open descriptors grew from 8 to 901"]


def test_shared_containers_with_no_pool_to_go_to_are_left_where_they_run() -> None:
    node = node_with(TWO, pod("io", running(PINNED, "p1"), pin="0-1"),
                     pod("web", running(SHARED, "s1")))
    view = {"p1": enforced("0-1"), "s1": enforced("0-1")}
    assert placements(node, view, nodes_of, CPUSet([0])) == []
    state = {"containers": [{"id": "p1", "cpus": "0-1"}, {"id": "s1", "cpus": ""}],
             "shared_pool": ""}
    assert state_matches(node, view, state) == []


def test_leftover_cgroups_are_found_by_name_in_the_cpuset_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cgroupfs, "CGROUP_ROOT", tmp_path)
    (tmp_path / "cpuset/kubepods/burstable/poda/c1").mkdir(parents=True)
    (tmp_path / "cpuset/kubepods/podb").mkdir(parents=True)
    (tmp_path / "cpuset/kubepods/podother").mkdir(parents=True)
    assert kernel.leftover_cgroups(["a", "b"], ["c1"]) == [
        str(tmp_path / "cpuset/kubepods/burstable/poda"),
        str(tmp_path / "cpuset/kubepods/burstable/poda/c1"),
        str(tmp_path / "cpuset/kubepods/podb")]

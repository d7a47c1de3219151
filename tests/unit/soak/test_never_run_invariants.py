"""The invariant on containers that never run (``cpuset_soak/invariants.py``): no container the
runtime reports exited, or created and not started past the grace, holds an exclusive CPU, a
pin reference or a place in the pool in the plugin's state document, and the kernel's shared
pool holds again what such containers were given; containers waiting within their grace keep
theirs off the pool and are listed."""

from __future__ import annotations

from cpuset_adapters.cri.results import ContainerInfo
from cpuset_core import CPUSet
from cpuset_soak.invariants import given_back, not_running_holders, placements, state_matches
from cpuset_soak.model import CREATED, EXPIRED, FAILED, INTEGER, PINNED, SHARED
from tests.unit.soak.soak_fixtures import TWO, enforced, node_with, pod, running

NOW = 2_000_000.0
"""The epoch's seconds the checks run at."""


def _cri(cid: str, state: str, age: float = 1.0) -> ContainerInfo:
    return ContainerInfo(id=cid, pod_id="sandbox", name="app", state=state, annotations={},
                         labels={}, created_at=int((NOW - age) * 1e9))


def _entry(cid: str, kind: str, cpus: str) -> dict[str, str]:
    return {"id": cid, "subject": f"default/{cid}/app", "kind": kind, "cpus": cpus}


def test_an_exited_container_the_plugin_still_holds_is_found_with_what_it_holds() -> None:
    state = {"containers": [_entry("dead", "integer", "1"), _entry("pin", "annotated", "0"),
                            _entry("web", "shared", "0"), _entry("ok", "integer", "0")]}
    listed = [_cri("dead", "CONTAINER_EXITED"), _cri("pin", "CONTAINER_EXITED"),
              _cri("web", "CONTAINER_EXITED"), _cri("ok", "CONTAINER_RUNNING")]
    found = not_running_holders(state, listed, now=NOW, grace_ends=13.0)
    assert found == [
        "default/dead/app (dead) is exited (its start failed, or it stopped), yet the plugin "
        "holds exclusive CPU(s) 1 for it",
        "default/pin/app (pin) is exited (its start failed, or it stopped), yet the plugin "
        "holds a pin reference on 0 for it",
        "default/web/app (web) is exited (its start failed, or it stopped), yet the plugin "
        "holds a place in the shared pool for it"]


def test_a_created_container_is_found_only_once_its_grace_and_the_slack_have_passed() -> None:
    state = {"containers": [_entry("idle", "integer", "1")]}
    young = [_cri("idle", "CONTAINER_CREATED", age=12.9)]
    assert not_running_holders(state, young, now=NOW, grace_ends=13.0) == []
    old = [_cri("idle", "CONTAINER_CREATED", age=14.0)]
    assert not_running_holders(state, old, now=NOW, grace_ends=13.0) == [
        "default/idle/app (idle) is created 14 s ago and never started, yet the plugin holds "
        "exclusive CPU(s) 1 for it"]
    assert not_running_holders(state, [], now=NOW, grace_ends=13.0) == []  # being removed


def test_the_kernels_pool_must_hold_again_what_a_container_that_never_ran_was_given() -> None:
    dead = running(INTEGER, "dead", 1, "1")
    dead.state = FAILED
    node = node_with(TWO, pod("web", running(SHARED, "s")), pod("bad", dead))
    assert given_back(node, {"s": enforced("0-1")}) == []
    assert given_back(node, {"s": enforced("0")}) == [
        "bad/dead (integer, dead), whose start failed, was given CPU(s) 1: the kernel's "
        "shared pool 0 still lacks them"]
    dead.state = EXPIRED
    assert "never started" in given_back(node, {"s": enforced("0")})[0]


def test_what_another_owner_holds_now_need_not_be_in_the_pool() -> None:
    dead = running(INTEGER, "dead", 1, "1")
    dead.state = FAILED
    node = node_with(TWO, pod("web", running(SHARED, "s")), pod("bad", dead),
                     pod("db", running(INTEGER, "i", 1, "1")))
    assert given_back(node, {"s": enforced("0"), "i": enforced("1")}) == []
    node.pods["db"].containers["i"].state = "removed"
    assert given_back(node, {"s": enforced("0")}, held=CPUSet([1])) == []  # a waiting one's
    node.pods["io"] = pod("io", running(PINNED, "p"), pin="1")
    assert given_back(node, {"s": enforced("0"), "p": enforced("1")}) == []


def _node_zero(cpus: CPUSet) -> CPUSet:
    return CPUSet([0])


def test_a_waiting_container_keeps_its_cpus_off_the_pool_and_must_be_listed() -> None:
    idle = running(INTEGER, "idle", 1, "1")
    idle.state = CREATED
    node = node_with(TWO, pod("web", running(SHARED, "s")), pod("idle", idle))
    view = {"s": enforced("0")}
    assert placements(node, view, _node_zero, CPUSet([0]), held=CPUSet([1])) == []
    state = {"containers": [{"id": "s", "cpus": "0"}, {"id": "idle", "cpus": "1"}],
             "shared_pool": "0"}
    assert state_matches(node, view, state, [idle]) == []
    assert state_matches(node, view, state) == [
        "inspect lists idle (None), which does not run"]
    state["containers"].pop()
    assert state_matches(node, view, state, [idle]) == [
        "inspect does not list idle/idle (integer, idle), created and within its start grace"]

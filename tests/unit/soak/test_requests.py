"""The workload requests the soak walks (``cpuset_soak/requests.py``) and what the model and
the invariants make of them: mixed containers (exclusive CPUs and the pool), containers on the
reserved CPUs, integer containers that decline exclusive CPUs, and the requests gated like a
pin — each allowed outcome on hand-worked nodes, and each misplacement found."""

from __future__ import annotations

import pytest

from cpuset_core import CPUSet
from cpuset_soak import requests
from cpuset_soak.invariants import exclusive_owners, placements
from cpuset_soak.kernel import KernelView
from cpuset_soak.model import INTEGER, MIXED, PINNED, RESERVED, SHARED, Container, Node
from cpuset_soak.parts import Model
from cpuset_soak.prediction import INSUFFICIENT, NAMESPACE, POOL_EMPTY
from cpuset_soak.reclass import class_change
from cpuset_soak.resync import resynchronized
from cpuset_soak.walk import Walk
from tests.unit.soak.soak_fixtures import FOUR, TWO, enforced, node_with, pod, running


def nodes_of(cpus: CPUSet) -> CPUSet:
    return CPUSet([0])


ALL = CPUSet([0])


def mixed(cid: str, cpus: int, own: str) -> Container:
    container = running(MIXED, cid, cpus, own)
    container.mixed = True
    return container


# -- the model ---------------------------------------------------------------------------------


def test_a_mixed_container_needs_a_pool_beside_its_cpus_even_with_no_one_else_there() -> None:
    node = node_with(TWO)
    assert node.predict_integer(1, on_pool=True).must_admit
    assert node.predict_integer(2, on_pool=True).reasons == {POOL_EMPTY}
    assert not node.predict_integer(2, on_pool=True).may_admit
    assert node.predict_integer(3, on_pool=True).reasons == {INSUFFICIENT}


def test_a_mixed_container_counts_as_exclusive_and_on_the_pool() -> None:
    node = node_with(FOUR, pod("m", mixed("m1", 2, "2-3")))
    assert node.exclusive_count() == 2
    assert node.shared_count() == 1
    # An integer container taking the pool's last two CPUs would leave the mixed one alone
    # on its own CPUs: refused like any shared container's pool.
    assert node.predict_integer(2).reasons == {POOL_EMPTY}
    assert node.predict_integer(1).must_admit


def test_a_pin_over_a_mixed_containers_own_cpus_must_move_them() -> None:
    node = node_with(FOUR, pod("m", mixed("m1", 2, "2-3")))
    # Its two CPUs move to two of 0-2, the pool keeps the third.
    assert node.predict_pinned(pod("io", pin="3", namespace="storage")).must_admit
    # Moved to 0-1 off a pin on 2-3, they would leave no pool beside them.
    prediction = node.predict_pinned(pod("io", pin="2-3", namespace="storage"))
    assert prediction.reasons == {POOL_EMPTY}
    assert not prediction.may_admit


def test_requests_are_placed_as_documented() -> None:
    plain = Node(online=FOUR)
    reserving = Node(online=FOUR, reserved=CPUSet([0]))
    assert requests.kind_of(plain, requests.OPTED_OUT, 2) == SHARED
    assert requests.kind_of(plain, requests.MIXED_REQUEST, 1) == MIXED
    assert requests.kind_of(plain, requests.SYSTEM, 0) == SHARED
    assert requests.kind_of(plain, requests.SYSTEM, 1) == INTEGER
    assert requests.kind_of(reserving, requests.SYSTEM, 1) == RESERVED
    assert requests.kind_of(reserving, requests.RESERVED_REQUEST, 0) == RESERVED
    assert requests.kind_of(plain, requests.RESERVED_REQUEST, 0) == SHARED  # best effort
    assert requests.kind_of(plain, requests.ISOLATED_REQUEST, 2) == INTEGER
    assert requests.exclusive(RESERVED, 1) == 0
    assert requests.exclusive(MIXED, 2) == 2


def test_a_gated_request_from_a_namespace_that_may_not_pin_is_refused_like_a_pin() -> None:
    node = Node(online=FOUR, namespaces=("storage",))
    for shape in (requests.RESERVED_REQUEST, requests.ISOLATED_REQUEST):
        assert requests.predict(node, pod("x"), shape, 1).reasons == {NAMESPACE}
        assert requests.predict(node, pod("y", namespace="storage"), shape, 1).must_admit
    # Nothing is taken from others by declining exclusive CPUs or asking for them beside
    # the pool: anyone may.
    assert requests.predict(node, pod("z"), requests.OPTED_OUT, 2).must_admit
    assert requests.predict(node, pod("z"), requests.MIXED_REQUEST, 1).must_admit


def test_a_container_on_the_reserved_cpus_needs_no_pool() -> None:
    node = node_with(TWO, pod("a", running(INTEGER, "i", 1, "1")))
    node.reserved = CPUSet([0])
    assert requests.predict(node, pod("k", namespace="kube-system"), requests.SYSTEM,
                            1).must_admit
    node.pods["k"] = pod("k", running(RESERVED, "r"), namespace="kube-system")
    assert node.shared_count() == 0


@pytest.mark.parametrize(("per_container", "key"), [
    (False, "mixed-cpus.nri-cpuset.io/pod"), (True, "mixed-cpus.nri-cpuset.io/container.app")])
def test_requests_are_annotated_per_pod_or_per_container(per_container: bool, key: str) -> None:
    assert requests.annotations_of(requests.MIXED_REQUEST, per_container=per_container) == {
        key: "true"}
    assert requests.annotations_of(requests.SYSTEM, per_container=per_container) == {}


def test_a_mixed_container_asks_half_a_cpu_more_than_its_exclusive_cpus() -> None:
    got = requests.resources(requests.MIXED_REQUEST, 2)
    assert got.cpu_quota == 250_000
    assert got.cpu_period == 100_000
    assert requests.resources(requests.OPTED_OUT, 2).cpu_quota == 200_000
    assert requests.qos(requests.RESERVED_REQUEST, 0) == "Burstable"


def test_a_resynchronize_keeps_a_mixed_container_only_with_a_pool_beside_it() -> None:
    node = node_with(TWO, pod("m", mixed("m1", 1, "1")),
                     pod("i", running(INTEGER, "i1", 1, "0")))
    resynchronized(node)
    # In id order: the integer container first (no one else needs the pool), then the mixed
    # one would leave no pool beside its CPUs: kept shared.
    assert node.pods["i"].containers["i1"].kind == INTEGER
    assert node.pods["m"].containers["m1"].kind == SHARED
    node.pods["i"].containers["i1"].state = "stopped"
    resynchronized(node)
    assert node.pods["m"].containers["m1"].kind == MIXED


def test_a_mixed_container_kept_shared_is_judged_as_mixed_at_its_update() -> None:
    node = node_with(FOUR, pod("m", mixed("m1", 1, "")))
    container = node.pods["m"].containers["m1"]
    container.kind = SHARED

    class NoChecks:
        def refresh_integers(self) -> None:
            return None

        def check_always(self) -> None:
            return None

    change = class_change(node.pods["m"], container, model=Model(node),
                          checks=NoChecks())
    assert change is not None
    assert change[0] == MIXED
    assert change[1].must_admit


def test_the_walk_draws_every_request() -> None:
    node = Node(online=FOUR, reserved=CPUSet([0]))
    walk = Walk(7, node)
    shapes = set()
    for _ in range(400):
        for op in walk.step():
            if op["kind"] == "create":
                shapes.add(op["type"])
        node.pods.clear()
    assert set(requests.SHAPES) <= shapes


# -- the invariants ------------------------------------------------------------------------------


def correct_node() -> tuple[Node, KernelView]:
    node = node_with(FOUR, pod("m", mixed("m1", 1, "3")),
                     pod("i", running(INTEGER, "i1", 1)),
                     pod("s", running(SHARED, "s1")),
                     pod("k", running(RESERVED, "r1"), namespace="kube-system"))
    node.reserved = CPUSet([0])
    view = {"m1": enforced("0-1,3"), "i1": enforced("2"), "s1": enforced("0-1"),
            "r1": enforced("0")}
    return node, view


def test_a_correct_node_with_requests_breaks_nothing() -> None:
    node, view = correct_node()
    assert exclusive_owners(node, view) == []
    assert placements(node, view, nodes_of, ALL) == []


def test_a_mixed_container_off_the_pool_or_off_its_own_cpus_is_found() -> None:
    node, view = correct_node()
    view["m1"] = enforced("3")
    assert "mixed, expected its 3 and the pool 0-1" in " ".join(
        placements(node, view, nodes_of, ALL))
    node.pods["m"].containers["m1"].actual = CPUSet.parse("2-3")  # says it owns two
    assert "owns 2-3, which is not that many" in " ".join(
        placements(node, view, nodes_of, ALL))


def test_a_mixed_container_on_an_integer_containers_cpu_is_found_at_once() -> None:
    node, view = correct_node()
    view["m1"] = enforced("0-3")
    found = exclusive_owners(node, view)
    assert len(found) == 1
    assert "CPU(s) 2 enforced for two exclusive owners" in found[0]


def test_two_mixed_containers_share_the_pool_by_design() -> None:
    node = node_with(FOUR, pod("a", mixed("m1", 1, "2")),
                     pod("b", mixed("m2", 1, "3")))
    view = {"m1": enforced("0-2"), "m2": enforced("0-1,3")}
    assert exclusive_owners(node, view) == []
    assert placements(node, view, nodes_of, ALL) == []


def test_a_container_off_the_reserved_cpus_is_found() -> None:
    node, view = correct_node()
    view["r1"] = enforced("0-1")
    found = placements(node, view, nodes_of, ALL)
    assert len(found) == 1
    assert "on the reserved CPUs, expected 0" in found[0]


def test_an_opted_out_container_is_judged_as_a_shared_one() -> None:
    node = node_with(TWO, pod("o", running(SHARED, "o1")), pod("p", running(PINNED, "p1"),
                                                                 pin="1"))
    assert placements(node, {"o1": enforced("0-1"), "p1": enforced("1")}, nodes_of, ALL) == [
        "o/o1 (shared, o1): shared, expected 0 (mems 0), the kernel enforces 0-1 (mems 0)"]

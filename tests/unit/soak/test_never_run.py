"""Containers that never run, in the soak's model (``cpuset_soak/model.py``, ``lifetimes.py``):
a failed start holds nothing at once (the plugin gives back what dead containers hold before
it refuses for want of room); a container created and not started holds what it was given
within the start grace, nothing once it has passed, and either near its end."""

from __future__ import annotations

from cpuset_core import CPUSet
from cpuset_soak import lifetimes
from cpuset_soak.model import (
    CREATED,
    EXPIRED,
    FAILED,
    INTEGER,
    PINNED,
    SHARED,
    Container,
    Grace,
    Node,
    Pod,
)
from cpuset_soak.prediction import INSUFFICIENT, POOL_EMPTY, Prediction
from tests.unit.soak.fakes import FakeClock
from tests.unit.soak.soak_fixtures import FOUR, TWO, node_with, pod, running

GRACE = Grace(seconds=10.0, margin=2.0, slack=3.0)


def _never_ran(kind: str, cid: str, state: str, cpus: int = 0, actual: str = "") -> Container:
    """Created (or failed) at 1000.0 on the fake clock."""
    container = running(kind, cid, cpus, actual)
    container.state, container.created_at = state, 1000.0
    return container


def _timed(node: Node) -> FakeClock:
    clock = FakeClock()
    node.grace, node.clock = GRACE, clock
    return clock


def test_a_failed_start_holds_nothing_so_what_fits_once_it_is_given_back_must_be_admitted(
        ) -> None:
    node = node_with(TWO, pod("web", running(SHARED, "s")),
                     pod("bad", _never_ran(INTEGER, "dead", FAILED, 1, "0")))
    assert node.exclusive_count() == 0
    assert node.predict_integer(1).must_admit
    pinned = node_with(TWO, pod("web", running(SHARED, "s")),
                       pod("bad", _never_ran(PINNED, "dead", FAILED), pin="1"))
    assert pinned.pins() == CPUSet()  # its pin's reference goes back with it
    assert pinned.predict_integer(1).must_admit


def test_a_failed_shared_container_needs_no_pool() -> None:
    node = node_with(TWO, pod("bad", _never_ran(SHARED, "dead", FAILED)))
    assert node.shared_count() == 0
    assert node.predict_integer(2).must_admit


def test_a_created_container_holds_its_cpus_within_the_grace() -> None:
    node = node_with(TWO, pod("web", running(SHARED, "s")),
                     pod("idle", _never_ran(INTEGER, "c", CREATED, 1, "0")))
    clock = _timed(node)
    clock.advance(5.0)
    prediction = lifetimes.judged(node, lambda: node.predict_integer(1))
    assert prediction.allows(POOL_EMPTY)
    assert not prediction.allows(None)


def test_once_the_grace_has_passed_a_created_container_holds_nothing_for_an_admission() -> None:
    node = node_with(TWO, pod("web", running(SHARED, "s")),
                     pod("idle", _never_ran(INTEGER, "c", CREATED, 1, "0")))
    clock = _timed(node)
    clock.advance(10.0)
    assert lifetimes.judged(node, lambda: node.predict_integer(1)).must_admit
    assert node.created()[0].state == CREATED  # set aside for the prediction only


def test_near_the_graces_end_either_answer_is_allowed() -> None:
    node = node_with(TWO, pod("web", running(SHARED, "s")),
                     pod("idle", _never_ran(INTEGER, "c", CREATED, 1, "0")))
    clock = _timed(node)
    clock.advance(8.5)
    prediction = lifetimes.judged(node, lambda: node.predict_integer(1))
    assert prediction.allows(None)
    assert prediction.allows(POOL_EMPTY)


def test_a_created_pin_holds_its_reference_and_a_created_shared_container_needs_the_pool(
        ) -> None:
    node = node_with(FOUR, pod("io", _never_ran(PINNED, "p", CREATED), pin="3"),
                     pod("web", _never_ran(SHARED, "s", CREATED)))
    assert node.pins() == CPUSet([3])
    assert node.shared_count() == 1
    assert node.predict_integer(3).reasons == {POOL_EMPTY}  # 0-2 free, one kept for the pool
    assert node.predict_integer(4).reasons == {INSUFFICIENT}
    assert node.predict_integer(2).must_admit


def test_a_created_container_expires_slack_after_its_grace_and_is_undecided_around_its_end(
        ) -> None:
    idle = _never_ran(INTEGER, "c", CREATED, 1, "0")
    node = node_with(TWO, pod("idle", idle))
    clock = _timed(node)
    clock.advance(7.0)
    assert lifetimes.undecided(node) == []
    assert lifetimes.decided_by(node) == 0.0
    clock.advance(1.0)  # 8 s: within the margin before the grace's end
    assert lifetimes.undecided(node) == [idle]
    assert lifetimes.decided_by(node) == 1000.0 + 13.0
    clock.advance(4.9)
    assert lifetimes.expire(node) == []
    clock.advance(0.1)  # 13 s: the grace and the start watch's slack have passed
    assert lifetimes.expire(node) == [idle]
    assert idle.state == EXPIRED
    assert lifetimes.undecided(node) == []
    assert node.exclusive_count() == 0


def test_what_a_state_document_says_a_container_was_given() -> None:
    document = {"containers": [{"id": "a", "cpus": "1-2"}, {"id": "b", "cpus": ""}]}
    assert lifetimes.given(document, "a") == CPUSet.parse("1-2")
    assert lifetimes.given(document, "b") == CPUSet()
    assert lifetimes.given(document, "c") is None


def test_either_of_two_predictions_allows_what_either_allows() -> None:
    admit = Prediction(may_admit=True, must_admit=True)
    refuse = Prediction(may_admit=False, must_admit=False, reasons=frozenset({POOL_EMPTY}))
    both = admit.either(refuse)
    assert (both.may_admit, both.must_admit, both.reasons) == (True, False, {POOL_EMPTY})
    assert admit.either(admit).must_admit


def test_a_release_of_a_container_that_never_ran_drains_nothing() -> None:
    idle = _never_ran(INTEGER, "c", CREATED, 1, "0")
    node = node_with(TWO, Pod(name="idle", namespace="default", qos="Guaranteed",
                              containers={"c": idle}))
    node.release(idle, "removed")
    assert node.uncertain == 0

"""The soak's model of the node (``cpuset_soak/model.py``): which outcomes of a creation
or a resize it allows, on hand-worked nodes, and what draining and a resynchronize change."""

from __future__ import annotations

from cpuset_core import CPUSet
from cpuset_soak.model import INTEGER, PINNED, SHARED, Container, Node, Pod
from cpuset_soak.outcomes import reason_of
from cpuset_soak.parts import Model
from cpuset_soak.prediction import (
    INSUFFICIENT,
    INVALID_ANNOTATION,
    NAMESPACE,
    POOL_EMPTY,
    REASSIGNMENT,
    UNAVAILABLE,
)
from cpuset_soak.reclass import CHANGING_CLASS, class_change
from cpuset_soak.resync import resynchronized
from tests.unit.soak.soak_fixtures import FOUR, TWO, node_with, pod, running


def test_an_integer_container_that_fits_must_be_admitted() -> None:
    node = node_with(TWO, pod("web", running(SHARED, "a")))
    prediction = node.predict_integer(1)
    assert prediction.must_admit
    assert not prediction.allows(INSUFFICIENT)


def test_an_integer_container_taking_the_last_shared_cpu_must_be_refused() -> None:
    node = node_with(TWO, pod("web", running(SHARED, "a")))
    prediction = node.predict_integer(2)
    assert not prediction.allows(None)
    assert prediction.allows(POOL_EMPTY)


def test_without_shared_containers_an_integer_container_may_take_every_cpu() -> None:
    assert node_with(TWO).predict_integer(2).must_admit


def test_more_cpus_than_are_free_are_refused_as_insufficient() -> None:
    node = node_with(FOUR, pod("db", running(INTEGER, "a", 3, "0-2")))
    prediction = node.predict_integer(2)
    assert prediction.allows(INSUFFICIENT)
    assert not prediction.allows(None)


def test_cpus_given_up_since_the_last_settle_may_be_refused_while_they_drain() -> None:
    db = pod("db", running(INTEGER, "a", 1, "0"))
    node = node_with(TWO, db)
    node.release(db.containers["a"], "stopped")
    prediction = node.predict_integer(2)
    assert prediction.allows(None)
    assert prediction.allows(INSUFFICIENT)
    node.settled()
    assert node.predict_integer(2).must_admit


def test_cpus_the_plugin_still_lists_as_draining_after_a_settle_may_be_refused() -> None:
    # The plants' failed-shrink.jsonl, step 4: runc took big/app's shrink again and the step
    # settled, but the plugin keeps CPU 1 draining until its verifier's next pass.
    big = running(INTEGER, "a", 1, "0")
    node = node_with(TWO, pod("big", big))
    node.settled(draining=CPUSet([1]))
    assert node.uncertain == 1
    prediction = node.predict_integer(1)
    assert prediction.allows(None)
    assert prediction.allows(INSUFFICIENT)
    node.settled(draining=CPUSet())
    assert node.predict_integer(1).must_admit


def test_a_draining_cpu_that_is_pinned_or_reserved_is_not_free_anyway() -> None:
    node = node_with(FOUR, pod("io", running(PINNED, "p"), pin="3"))
    node.reserved = CPUSet([2])
    node.settled(draining=CPUSet.parse("1-3"))
    assert node.uncertain == 1


def test_a_pin_over_an_integer_container_needs_room_to_move_it() -> None:
    node = node_with(TWO, pod("db", running(INTEGER, "a", 1, "1")))
    fits = Pod(name="io", namespace="default", qos="Burstable", annotation="1")
    assert node.predict_pinned(fits).must_admit
    whole = Pod(name="io", namespace="default", qos="Burstable", annotation="0-1")
    prediction = node.predict_pinned(whole)
    assert prediction.allows(REASSIGNMENT)
    assert not prediction.allows(None)


def test_a_pin_that_would_empty_the_shared_pool_is_refused() -> None:
    node = node_with(TWO, pod("web", running(SHARED, "a")))
    prediction = node.predict_pinned(Pod(name="io", namespace="default", qos="Burstable",
                                         annotation="0-1"))
    assert prediction.allows(POOL_EMPTY)
    assert not prediction.allows(None)


def test_bad_pins_are_refused_with_their_reason() -> None:
    node = node_with(TWO)
    for annotation, reason in (("0,,1", INVALID_ANNOTATION), ("64", UNAVAILABLE)):
        prediction = node.predict_pinned(Pod(name="x", namespace="default", qos="Burstable",
                                             annotation=annotation))
        assert prediction.reasons == {reason}
        assert not prediction.allows(None)


def test_a_narrowed_allowlist_refuses_new_pins_and_a_resynchronize_unpins_running_ones() -> None:
    pinned = pod("io", running(PINNED, "a"), pin="1")
    node = node_with(TWO, pinned)
    node.namespaces = ("storage",)
    other = Pod(name="x", namespace="default", qos="Burstable", annotation="0")
    assert node.predict_pinned(other).reasons == {NAMESPACE}
    assert node.pins() == CPUSet([1])  # running pins keep their CPUs until a synchronize
    resynchronized(node)
    assert pinned.pin is None
    assert pinned.containers["a"].kind == SHARED
    node.namespaces = ("*",)
    resynchronized(node)
    assert pinned.pin == CPUSet([1])
    assert pinned.containers["a"].kind == PINNED


def test_the_runtime_error_text_names_the_typed_refusal() -> None:
    text = ("rpc error: failed to get NRI adjustment: nri-cpuset: default/db/app: needs 2 "
            "exclusive CPU(s) but only 1 are free (online minus pinned, exclusive and reserved)")
    assert reason_of(text) == INSUFFICIENT
    assert reason_of("context deadline exceeded") is None
    assert reason_of("nri-cpuset: default/io/a: shared CPU pool would be empty: x") == POOL_EMPTY


def test_a_resynchronize_with_shared_containers_and_no_pool_runs_the_last_integer_shared() -> None:
    node = node_with(TWO, pod("a", running(INTEGER, "i-a", 1, "0")),
                     pod("b", running(INTEGER, "i-b", 1, "1")),
                     pod("web", running(SHARED, "s")))
    resynchronized(node)
    assert node.pods["a"].containers["i-a"].kind == INTEGER
    assert node.pods["b"].containers["i-b"].kind == SHARED
    node.pods["web"].containers["s"].state = "stopped"
    resynchronized(node)
    assert node.pods["b"].containers["i-b"].kind == INTEGER


def test_a_pool_already_empty_refuses_no_pin_or_integer_container_for_that() -> None:
    node = node_with(TWO, pod("a", running(PINNED, "p"), pin="0-1"),
                     pod("web", running(SHARED, "s")))
    assert node.predict_pinned(Pod(name="x", namespace="default", qos="Burstable",
                                   annotation="1")).must_admit
    assert node.predict_shared().reasons == {POOL_EMPTY}


def test_a_guaranteed_container_kept_shared_is_judged_as_leaving_the_pool_at_its_update() -> None:
    # Seed 1125 on containerd 1.7, step 1710: a Synchronize had kept p683's Guaranteed
    # container shared; with no other shared container left, a CRI cpuset update made the
    # plugin place it as an integer container on the last free CPU, leaving the pool empty.
    kept = running(SHARED, "b", 1, "0")
    node = node_with(TWO, pod("p689", running(INTEGER, "a", 1, "1")), pod("p683", kept))
    assert not node.predict_integer(1).allows(None)  # judged as one more shared container
    kept.kind = CHANGING_CLASS
    assert node.predict_integer(1).must_admit
    node.pods["web"] = pod("web", running(SHARED, "c"))
    assert node.predict_integer(1).allows(POOL_EMPTY)  # another shared one still needs a CPU
    assert not node.predict_integer(1).allows(None)


def _demoted_pin(name: str) -> tuple[Node, Pod, Container]:
    """A pod pinned to CPU 1 whose container a Synchronize ran shared, beside a shared pod."""
    demoted = running(SHARED, "b")
    pinned = pod(name, demoted)
    pinned.annotation = "1"
    return node_with(TWO, pinned, pod("web", running(SHARED, "c"))), pinned, demoted


def test_a_pin_run_shared_while_its_namespace_was_not_allowed_is_judged_as_leaving_the_pool(
        ) -> None:
    # Seed 2125 on containerd 2.1, step 2537: a Synchronize ran p1059's pin shared (its
    # namespace not allowed then); after a reload allowing it, its CRI update pinned it again.
    node, p1059, demoted = _demoted_pin("p1059")
    node.namespaces = ("storage",)
    assert node.predict_pinned(p1059).allows(NAMESPACE)
    node.namespaces = ("*",)
    demoted.kind = CHANGING_CLASS
    assert node.predict_pinned(p1059).must_admit


class _NoKernel:
    """Checks that read nothing: ``class_change`` refreshes where integer containers run."""

    def refresh_integers(self) -> None:
        pass

    def check_always(self) -> None:
        pass


def test_a_pin_kept_shared_stays_shared_at_its_update_while_its_namespace_may_not_pin(
        ) -> None:
    # CpusetEngine.plan_resize keeps a running container whose pin it may not claim where it
    # runs, instead of refusing the kubelet's update.
    node, p9, demoted = _demoted_pin("p9")
    model, checks = Model(node), _NoKernel()
    node.namespaces = ("storage",)
    assert class_change(p9, demoted, model=model, checks=checks) is None
    p9.annotation = "1-"
    node.namespaces = ("*",)
    assert class_change(p9, demoted, model=model, checks=checks) is None
    p9.annotation = "1"
    change = class_change(p9, demoted, model=model, checks=checks)
    assert change is not None
    assert change[0] == PINNED
    assert demoted.kind == SHARED

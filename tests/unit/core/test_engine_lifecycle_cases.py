"""Lifecycles the model-based tests (test_engine_stateful.py, test_lifecycle_stateful.py) once
found failing, replayed as explicit steps through the same models and their checks, so they run
whatever Hypothesis draws."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from cpuset_core import AllocationOptions, CPUSet
from cpuset_lab.machines import DUAL_SOCKET_HT, THIS_MACHINE_LIKE, MachineShape
from tests.unit.core.engine_lifecycle_model import EngineLifecycle
from tests.unit.core.lifecycle_model import Lifecycle

PIN = "weka.io/cores-ids"


def _options(*pin_namespaces: str) -> dict[str, Any]:
    return {"allocation": AllocationOptions(), "pin_namespaces": pin_namespaces,
            "min_shared_pool": 0}


def _replay(shape: MachineShape, steps: list[Callable[[EngineLifecycle], object]]) -> None:
    """Start the model on ``shape``, every namespace allowed to pin, then run ``steps``, each
    followed by every invariant, as Hypothesis runs them."""
    state = EngineLifecycle()
    state.start(shape=shape, reserve_first=False, strict=False, min_pool=0,
                options={"exclusive_on_isolated": False, "allocation": AllocationOptions(),
                         "pin_namespaces": ("*",)})
    try:
        for step in [lambda _: None, *steps]:
            step(state)
            state.ledger_invariants_hold()
            state.managed_containers_run_where_the_ledger_says()
            state.safety_holds_even_for_drifted_containers()
    finally:
        state.teardown()


def _create_pin(state: EngineLifecycle) -> None:
    pod = state._new_pod(qos="guaranteed", annotations={PIN: "0"})
    assert state._create(pod, state._container(pod, None)) == ["c1"]


@pytest.mark.parametrize("shape", [THIS_MACHINE_LIKE, DUAL_SOCKET_HT],
                         ids=["one-node", "two-nodes"])
def test_a_failed_synchronize_leaves_a_resized_former_pin_as_it_was(
        shape: MachineShape) -> None:
    """A pin run shared (its namespace lost the right) is resized and keeps where it runs;
    when pins are allowed again, the synchronize that re-pins it fails and is undone. The
    container must be as it was, memory nodes included: the resize must not have unset the
    cpuset.mems the runtime had (an update that does not name mems leaves them as they are)."""
    _replay(shape, [
        _create_pin,
        lambda s: s.reconfigure_live(options=_options("weka")),
        lambda s: s.synchronize(),
        lambda s: s.fail_next_update_of(container="c1"),
        lambda s: s.resize(container="c1", cpus=None),
        lambda s: s.reconfigure_live(options=_options("*")),
        lambda s: s.synchronize(),
    ])


def test_an_app_after_several_completed_containers_reuses_what_its_pod_left() -> None:
    """Two completed containers left CPUs 0,8 and 1; a blocker takes 0 while the init runs
    (on 1) and leaves. With 0 free again, the app takes the best-shaped CPU of the pod's 1,8,
    which need not be the init's: the pod's memory is every completed container's CPUs."""
    state = Lifecycle()
    state.start(shape=DUAL_SOCKET_HT, reserve_first=False)

    def check() -> None:
        state.ledger_invariants_hold()
        state.left_behind_cpus_match_the_model()
        state.the_ledger_holds_exactly_the_live_containers()

    pod = state.new_pod(guaranteed=True, pinned=False, data=None)
    first = state.create(pod=pod, cpus=2, name="init")
    second = state.create(pod=pod, cpus=1, name="init")
    for cid in (second, first):
        state.remove(container=cid)
        check()
    assert state.engine.left_behind(pod.sandbox_id) == CPUSet.parse("0-1,8")
    state.init_runs_to_completion_then_the_app_reuses_its_cpus(pod=pod, cpus=1, blocked=True)
    check()
    [app] = [e for e in state.engine.ledger.entries.values() if e.subject.endswith("/app")]
    assert app.cpus <= CPUSet.parse("1,8")
    state.teardown()

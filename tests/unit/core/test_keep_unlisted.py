"""A synchronize that keeps the containers its report does not list (``keep_unlisted``): a CRI
inventory lags NRI (containerd calls CreateContainer before the container enters its CRI store),
so what the engine decided meanwhile must stay as decided, described from its ledger entry."""

from __future__ import annotations

import pytest

from cpuset_core.engine import CpusetEngine
from cpuset_core.model import ContainerFacts, Kind, PodFacts
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET, cpus

PIN = pod("io", qos="burstable", annotations={DEFAULT_PIN_ANNOTATION: "5"})
INTEGER = pod("db")
SHARED = pod("web", qos="burstable")
LISTED = pod("listed", qos="burstable")


def decided() -> tuple[CpusetEngine, dict[str, tuple[PodFacts, ContainerFacts]]]:
    """An engine that admitted a pin, an integer and a shared container, and one more that the
    reports below do list."""
    engine = CpusetEngine(DUAL_SOCKET)
    admitted = {"pin": (PIN, container("pin", PIN)),
                "integer": (INTEGER, container("integer", INTEGER, cpu_limit=2)),
                "shared": (SHARED, container("shared", SHARED)),
                "listed": (LISTED, container("listed", LISTED))}
    for p, facts in admitted.values():
        engine.commit(engine.plan_create(p, facts))
    return engine, admitted


def reported(engine: CpusetEngine, p: PodFacts, facts: ContainerFacts) -> ContainerFacts:
    """``facts`` as the runtime reports them: running where the engine placed them."""
    placement = engine.placement(facts.id)
    assert placement is not None
    mems = "" if placement.mems is None else placement.mems.format()
    return ContainerFacts(id=facts.id, sandbox_id=p.sandbox_id, name=facts.name,
                          cpus=placement.cpus.format(), mems=mems)


@pytest.mark.parametrize("kind", ["pin", "integer", "shared"])
def test_a_container_the_report_does_not_list_keeps_its_placement(kind: str) -> None:
    engine, admitted = decided()
    before = engine.ledger.entries[kind]
    listed = reported(engine, *admitted["listed"])
    plan = engine.plan_synchronize([LISTED], [listed], keep_unlisted=True)
    assert plan.result.entries[kind] == before
    assert plan.problems == ()
    assert plan.updates == ()
    dropped = engine.plan_synchronize([LISTED], [listed])
    assert kind not in dropped.result.entries


def test_the_pods_of_kept_containers_need_not_be_reported() -> None:
    engine, _ = decided()
    plan = engine.plan_synchronize([], [], keep_unlisted=True)
    assert plan.result.entries == engine.ledger.entries
    assert (plan.problems, plan.updates) == ((), ())


def test_a_kept_containers_cpus_are_not_given_to_a_later_container() -> None:
    engine, _ = decided()
    held = engine.ledger.entries["integer"].cpus
    engine.commit(engine.plan_synchronize([], [], keep_unlisted=True))
    later = pod("later")
    plan = engine.plan_create(later, container("later", later, cpu_limit=2))
    assert plan.placement is not None
    assert plan.placement.cpus.isdisjoint(held | cpus("5"))


def test_a_kept_shared_container_follows_the_pool_it_runs_in() -> None:
    engine, _ = decided()
    pool_before = engine.shared_pool()
    new_pin = pod("new", qos="burstable", annotations={DEFAULT_PIN_ANNOTATION: "0"})
    running = ContainerFacts(id="new", sandbox_id=new_pin.sandbox_id, name="main", cpus="0",
                             mems="0")
    plan = engine.plan_synchronize([new_pin], [running], keep_unlisted=True)
    (update,) = [u for u in plan.updates if u.container_id == "shared"]
    assert (update.kind, update.previous_cpus) == (Kind.SHARED, pool_before)
    assert update.cpus == pool_before - cpus("0") == plan.shared_pool


def test_a_listed_container_is_decided_from_the_report_not_from_its_entry() -> None:
    engine, admitted = decided()
    p, facts = admitted["integer"]
    grown = container(facts.id, p, cpu_limit=4,
                      cpus_now=engine.ledger.entries["integer"].cpus.format())
    plan = engine.plan_synchronize([p], [grown], keep_unlisted=True)
    assert plan.result.entries["integer"].request == 4
    assert len(plan.result.entries["integer"].cpus) == 4
    assert plan.result.entries["pin"] == engine.ledger.entries["pin"]

"""Steps the engine tests share: admit or release a container and commit the plan, create
shared, integer and annotated containers, synchronize, and read a plan's placement and updates.
"""

from __future__ import annotations

from collections.abc import Sequence

from cpuset_core.engine import CpusetEngine
from cpuset_core.invariants import violations
from cpuset_core.model import ContainerFacts, ContainerUpdate, Placement, PodFacts
from cpuset_core.plan import Plan
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET

KEY = DEFAULT_PIN_ANNOTATION
ALL = DUAL_SOCKET.online


def admit(engine: CpusetEngine, p: PodFacts, c: ContainerFacts) -> Plan:
    plan = engine.plan_create(p, c)
    engine.commit(plan)
    return plan


def release(engine: CpusetEngine, cid: str) -> Plan:
    plan = engine.plan_release(cid)
    engine.commit(plan)
    return plan


def shared_ctr(engine: CpusetEngine, name: str) -> Plan:
    p = pod(name, qos="burstable")
    return admit(engine, p, container(name, p))


def integer_ctr(engine: CpusetEngine, name: str, count: int) -> Plan:
    p = pod(name)
    return admit(engine, p, container(name, p, cpu_limit=count))


def annotated_ctr(engine: CpusetEngine, name: str, pins: str) -> Plan:
    p = pod(name, qos="burstable", annotations={KEY: pins})
    return admit(engine, p, container(name, p))


def placed(plan: Plan) -> Placement:
    assert plan.placement is not None
    return plan.placement


def updates_by_id(plan: Plan) -> dict[str, ContainerUpdate]:
    ids = [u.container_id for u in plan.updates]
    assert len(ids) == len(set(ids)), "one update per container"
    return {u.container_id: u for u in plan.updates}


def sync(engine: CpusetEngine, pods: Sequence[PodFacts],
         containers: Sequence[ContainerFacts]) -> Plan:
    plan = engine.plan_synchronize(pods, containers)
    engine.commit(plan)
    assert violations(engine.topology, engine.ledger, engine.settings) == []
    return plan


def _integer(engine: CpusetEngine, name: str, count: int) -> None:
    p = pod(name)
    engine.commit(engine.plan_create(p, container(name, p, cpu_limit=count)))

"""What ``nri-cpuset plan --pods`` does and shows: admitting pods in order into a dry run.

Containers start in the kubelet's order: a pod's init containers one after the other, each
(unless it is a sidecar, ``restartPolicy: Always``) exiting before the next starts, so its CPUs
go back before the app containers are admitted; then the app containers. Every admission goes
through the same engine as the daemon's (``bootstrap.build_dry_run``), and each step records the
live moves and the shared-pool change it causes. A rejected container is recorded with its typed
reason, and the pod's other containers are still admitted.

``--state`` starts from a saved live state (``nri-cpuset inspect -o json``): its containers are
reported to the dry run as running, with their CPUs, and synchronized, which keeps every valid
placement as it is.

The JSON form (through cattrs) is the schema documented in ``docs/cli.md``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from cpuset_adapters.kubelet import CFS_PERIOD, cgroup_parent
from cpuset_cli import bootstrap
from cpuset_cli.pod_specs import ContainerSpec, PodSpec, containers_in_order
from cpuset_core import (
    AdmissionError,
    ContainerFacts,
    CPUSet,
    DeviceLocality,
    Kind,
    Plan,
    PodFacts,
    QoS,
    Settings,
)
from cpuset_core.workload import MIXED, RESERVED

if TYPE_CHECKING:
    from cpuset_cli.state_view import StateView

SCHEMA_VERSION: Final = 1
CREATE: Final = "create"
EXIT: Final = "exit"


@dataclass(frozen=True, slots=True)
class MoveView:
    """A running container moved by an admission (an integer container off pinned CPUs)."""

    container: str
    kind: str
    previous_cpus: str
    cpus: str
    reason: str


@dataclass(frozen=True, slots=True)
class PoolChangeView:
    """The shared pool changed: every listed shared container moves with it."""

    before: str
    after: str
    containers: list[str]


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str
    """The typed reason (``insufficient-cpus``, ``invalid-annotation``, …)."""
    message: str


@dataclass(frozen=True, slots=True)
class PlannedQuiet:
    """A container's quiet-CPU request as the dry run keeps it: whether the node can give it
    is known only on the node (``inspect``)."""

    keys: list[str]
    asks: str


@dataclass(frozen=True, slots=True)
class StepView:
    """One container starting (``create``) or an init container finishing (``exit``)."""

    step: int
    action: str
    pod: str
    container: str
    init: bool
    qos: str
    kind: str | None
    """``annotated``, ``integer`` or ``shared``; ``None`` when rejected."""
    cpus: str | None
    mems: str | None
    """``None``: ``cpuset.mems`` is left as it is."""
    reason: str
    rejected: Rejection | None = None
    moves: list[MoveView] = field(default_factory=list)
    shared_pool: PoolChangeView | None = None
    quiet: PlannedQuiet | None = None
    """Its quiet-CPU request, kept (``None``: none, or ignored: ``reason`` says why)."""


@dataclass(frozen=True, slots=True)
class PlanView:
    schema: int
    topology: str
    steps: list[StepView]
    admitted: int
    rejected: int
    state_problems: list[str] = field(default_factory=list)
    """Containers of ``--state`` that could not be placed as they were (reported, not fatal)."""


def admit_all(runtime: bootstrap.DryRun, pods: Sequence[PodSpec], *, topology: str,
              state_problems: Sequence[str] = ()) -> PlanView:
    """Admit every container of ``pods`` in order into ``runtime``; return what happened."""
    steps: list[StepView] = []
    admitted = rejected = 0
    for pod in pods:
        for container in containers_in_order(pod):
            step = _create(runtime, pod, container, len(steps) + 1)
            steps.append(step)
            if step.rejected is not None:
                rejected += 1
                continue
            admitted += 1
            if container.init and not container.sidecar:
                steps.append(_exit(runtime, pod, container, step, len(steps) + 1))
    return PlanView(schema=SCHEMA_VERSION, topology=topology, steps=steps, admitted=admitted,
                    rejected=rejected, state_problems=list(state_problems))


def _create(runtime: bootstrap.DryRun, pod: PodSpec, container: ContainerSpec,
            number: int) -> StepView:
    common: dict[str, Any] = {"step": number, "action": CREATE, "pod": pod.ref,
                              "container": container.name, "init": container.init,
                              "qos": pod.qos.value}
    try:
        plan = runtime.create_container(pod.facts, container.facts)
    except AdmissionError as exc:
        return StepView(**common, kind=None, cpus=None, mems=None, reason=exc.detail,
                        rejected=Rejection(exc.reason, str(exc)))
    placement = plan.placement
    assert placement is not None  # a create plan always places its container
    assert plan.container_id is not None
    entry = plan.result.entries[plan.container_id]
    quiet = (None if entry.quiet is None
             else PlannedQuiet(keys=list(entry.quiet.keys), asks=entry.quiet.describe()))
    # The label: reserved, mixed, or the kind.
    return StepView(**common, kind=entry.label, cpus=placement.cpus.format(),
                    mems=placement.mems.format() if placement.mems is not None else None,
                    reason=plan.reason, moves=_moves(plan), shared_pool=_pool(plan),
                    quiet=quiet)


def _exit(runtime: bootstrap.DryRun, pod: PodSpec, container: ContainerSpec,
          created: StepView, number: int) -> StepView:
    plan = runtime.remove_container(container.facts.id)
    return StepView(step=number, action=EXIT, pod=pod.ref, container=container.name, init=True,
                    qos=pod.qos.value, kind=created.kind, cpus=created.cpus, mems=created.mems,
                    reason=f"init container finished: {plan.reason}", moves=_moves(plan),
                    shared_pool=_pool(plan))


def _moves(plan: Plan) -> list[MoveView]:
    return [MoveView(container=m.subject, kind=m.kind.value, previous_cpus=m.previous_cpus.format(),
                     cpus=m.cpus.format(), reason=m.reason) for m in plan.moves]


def _pool(plan: Plan) -> PoolChangeView | None:
    change = plan.pool_change
    if change is None:
        return None
    entries = plan.result.entries
    return PoolChangeView(before=change.before.format(), after=change.after.format(),
                          containers=[entries[cid].subject for cid in change.container_ids])


def as_json(view: PlanView) -> str:
    import cattrs  # noqa: PLC0415 - only the JSON output needs it

    return json.dumps(cattrs.Converter().unstructure(view), indent=2)


# -- starting from a saved state ---------------------------------------------------------------


def seed(runtime: bootstrap.DryRun, state: StateView, settings: Settings) -> list[str]:
    """Report the state's containers to ``runtime`` as running and synchronize; return the
    problems the synchronize reported (containers it could not place as they were)."""
    pods: dict[str, PodFacts] = {}
    containers: list[tuple[str, ContainerFacts]] = []
    kinds: dict[str, set[str]] = {}
    pins: dict[str, set[str]] = {}
    requests: dict[str, dict[str, str]] = {}
    for c in state.containers:
        namespace, pod_name, name = _split_subject(c.subject, c.id)
        key = f"{namespace}/{pod_name}"
        kinds.setdefault(key, set()).add(c.kind)
        if c.kind == Kind.ANNOTATED.value:
            pins.setdefault(key, set()).add(c.cpus)
        requests.setdefault(key, {}).update(_requests_of(c.kind, name, namespace, settings))
        integer = c.kind in (Kind.INTEGER.value, "mixed")
        # A mixed container's limit had a fraction beside its whole CPUs; which one is not in
        # the state, and any keeps it mixed.
        quota = (c.request * CFS_PERIOD + (CFS_PERIOD // 2 if c.kind == "mixed" else 0)
                 if integer else None)
        containers.append((key, ContainerFacts(
            id=c.id, sandbox_id=key, name=name, cpus=c.cpus, mems=c.mems or "",
            cpu_quota=quota, cpu_period=CFS_PERIOD if integer else None,
            devices=devices_on(c.devices, "its devices, as the live state says"))))
        pods.setdefault(key, PodFacts(sandbox_id=key, namespace=namespace, name=pod_name))
    for key, pod in pods.items():
        annotations = ({settings.pin_annotation: ",".join(sorted(pins[key]))}
                       if key in pins else {})
        annotations.update(requests.get(key, {}))
        qos = (QoS.GUARANTEED if kinds[key] & {Kind.INTEGER.value, "mixed"}
               else QoS.BURSTABLE)
        runtime.host.add_pod(PodFacts(sandbox_id=key, namespace=pod.namespace, name=pod.name,
                                      uid=key, annotations=annotations,
                                      cgroup_parent=cgroup_parent(qos, key.replace("/", "_"))))
    for _key, facts in containers:
        runtime.host.start_unmanaged(facts)
    plan = runtime.synchronize()
    return [str(problem) for problem in plan.problems]


def _requests_of(kind: str, container: str, namespace: str,
                 settings: Settings) -> dict[str, str]:
    """The workload annotations that make a container of the live state the ``kind`` it is
    there (``reserved``, ``mixed``), for a seeded synchronize to decide it so again."""
    if kind == "mixed":
        return {MIXED.container_prefix + container: "true"}
    if kind == "reserved" and not settings.runs_on_reserved(namespace):
        return {RESERVED.container_prefix + container: "true"}
    return {}


def devices_on(nodes: str, device: str) -> tuple[DeviceLocality, ...]:
    """A container's devices as one on the NUMA ``nodes`` (a list; "" for none)."""
    hinted = CPUSet.parse(nodes, allow_empty=True)
    return (DeviceLocality(device=device, numa_nodes=hinted),) if hinted else ()


def _split_subject(subject: str, container_id: str) -> tuple[str, str, str]:
    parts = subject.split("/", 2)
    if len(parts) != 3 or parts[0] == "?":
        # A container whose pod the daemon did not know: a pod of its own.
        return "?", f"unknown-{container_id}", parts[-1]
    return parts[0], parts[1], parts[2]

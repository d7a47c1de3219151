"""The core's pod and container facts, as the runtime would report them."""

from __future__ import annotations

from collections.abc import Mapping

from cpuset_core.model import ContainerFacts, PodFacts
from cpuset_core.settings import DEFAULT_PIN_ANNOTATION

NAMESPACE = "ns"
PERIOD = 100_000


def pod(name: str, *, qos: str = "guaranteed", annotations: Mapping[str, str] | None = None,
        pins: str | None = None, cgroup_parent: str | None = None) -> PodFacts:
    """A pod named ``name`` (sandbox ``sb-<name>``) of the given QoS ("guaranteed", "burstable",
    "besteffort"), cgroupfs driver unless ``cgroup_parent`` is given; ``pins`` sets the default
    pin annotation."""
    uid = f"uid-{name}"
    if cgroup_parent is None:
        cgroup_parent = (f"/kubepods/pod{uid}" if qos == "guaranteed"
                         else f"/kubepods/{qos}/pod{uid}")
    annotations = dict(annotations or {})
    if pins is not None:
        annotations[DEFAULT_PIN_ANNOTATION] = pins
    return PodFacts(sandbox_id=f"sb-{name}", namespace=NAMESPACE, name=name, uid=uid,
                    annotations=annotations, cgroup_parent=cgroup_parent)


def container(cid: str, of: PodFacts, *, cpu_limit: float | None = None, name: str = "main",
              cpus_now: str = "", mems_now: str = "") -> ContainerFacts:
    """A container of pod ``of``; ``cpu_limit`` in CPUs (1.5 = 1500m) sets quota and period;
    ``cpus_now``/``mems_now``: the cpuset the runtime reports it runs on ("" = unset)."""
    quota = None if cpu_limit is None else round(cpu_limit * PERIOD)
    period = None if cpu_limit is None else PERIOD
    return ContainerFacts(id=cid, sandbox_id=of.sandbox_id, name=name, cpu_quota=quota,
                          cpu_period=period, cpus=cpus_now, mems=mems_now)


def subject(of: PodFacts, name: str = "main") -> str:
    """The ``namespace/pod/container`` string errors must name."""
    return f"{of.namespace}/{of.name}/{name}"

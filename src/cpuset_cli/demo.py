"""The built-in demonstration scenario for ``nri-cpuset plan --demo``.

It adapts to the machine: the integer pod asks for a quarter of the online CPUs (at least one),
and the pins name CPUs that the earlier steps actually hold, so every step is meaningful on a
2-CPU VM and on a 256-CPU server alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cpuset_adapters.dry_run import DryRunRuntime
from cpuset_adapters.kubelet import CFS_PERIOD
from cpuset_core import MAX_ID, ContainerFacts, PodFacts, Topology


@dataclass(frozen=True, slots=True)
class DemoStep:
    """One action: create (pod, container) or remove (container id)."""

    action: str
    pod: PodFacts | None
    container: ContainerFacts | None
    remove_id: str = ""


def _pod(name: str, namespace: str, *, qos: str = "guaranteed",
         annotations: dict[str, str] | None = None) -> PodFacts:
    parent = {"guaranteed": f"/kubepods/pod-{name}",
              "burstable": f"/kubepods/burstable/pod-{name}"}[qos]
    return PodFacts(sandbox_id=f"sandbox-{name}", namespace=namespace, name=name,
                    uid=f"uid-{name}", annotations=annotations or {}, cgroup_parent=parent)


def _container(pod: PodFacts, name: str, cpus: float | None) -> ContainerFacts:
    quota = None if cpus is None else int(cpus * CFS_PERIOD)
    return ContainerFacts(id=f"{pod.name}-{name}", sandbox_id=pod.sandbox_id, name=name,
                          cpu_quota=quota, cpu_period=None if cpus is None else CFS_PERIOD,
                          cpu_shares=None if cpus is None else int(cpus * 1024))


def steps(topology: Topology, runtime: DryRunRuntime) -> list[Callable[[], DemoStep]]:
    """Return the scenario as thunks: later steps look at what earlier ones placed."""
    request = max(1, len(topology.online) // 4)
    web = _pod("web", "default", qos="burstable")
    db = _pod("db", "default")

    def db_first_cpu() -> int:
        placed = runtime.host.containers.get("db-postgres")
        return placed.cpus.first() if placed and placed.cpus else topology.online.first()

    def pinned(name: str, value: str) -> DemoStep:
        pod = _pod(name, "storage", annotations={"weka.io/cores-ids": value})
        return DemoStep("create", pod, _container(pod, "io", 0.5))

    return [
        lambda: DemoStep("create", web, _container(web, "app", 0.5)),
        lambda: DemoStep("create", db, _container(db, "postgres", request)),
        lambda: pinned("frontend", str(db_first_cpu())),
        lambda: pinned("typo", "0,,1"),
        lambda: pinned("ghost", str(min(topology.known.last() + 1, MAX_ID))),
        lambda: DemoStep("remove", None, None, remove_id="db-postgres"),
        lambda: pinned("cache", str(topology.online.last())),
    ]

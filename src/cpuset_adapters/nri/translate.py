"""Translation between NRI messages and the core's facts, placements and updates."""

from __future__ import annotations

from collections.abc import Iterable

from cpuset_adapters.device_locality import DeviceNode, LocateDevices
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import (
    ContainerFacts,
    ContainerUpdate,
    CPUSet,
    Placement,
    PodFacts,
)


def pod_facts(pod: pb.PodSandbox) -> PodFacts:
    """What the core needs of a pod: identity, annotations, and the kubelet cgroup parent."""
    return PodFacts(sandbox_id=pod.id, namespace=pod.namespace, name=pod.name, uid=pod.uid,
                    annotations=dict(pod.annotations), cgroup_parent=pod.linux.cgroup_parent)


def container_facts(container: pb.Container, *, started: bool = True,
                    locate: LocateDevices | None = None) -> ContainerFacts:
    """What the core needs of a container; a wrapper the runtime left out is ``None``. A
    container not ``started`` is reported without a cpuset: what its record says binds no
    process, so a rebuild places it afresh instead of letting it claim CPUs that others (which
    run) may hold since it was given up. ``locate`` finds its devices (``None``: none are
    looked at)."""
    resources = container.linux.resources
    cpu, memory = resources.cpu, resources.memory
    return ContainerFacts(
        id=container.id, sandbox_id=container.pod_sandbox_id, name=container.name,
        cpu_shares=cpu.shares.value if cpu.HasField("shares") else None,
        cpu_quota=cpu.quota.value if cpu.HasField("quota") else None,
        cpu_period=cpu.period.value if cpu.HasField("period") else None,
        memory_limit=memory.limit.value if memory.HasField("limit") else None,
        cpus=cpu.cpus if started else "", mems=cpu.mems if started else "",
        cgroups_path=container.linux.cgroups_path,
        # The kubelet sends a limit for every page size, 0 for those not asked for.
        hugepages=any(h.limit > 0 for h in resources.hugepage_limits),
        devices=() if locate is None else locate(device_nodes(container), container.env))


def device_nodes(container: pb.Container) -> list[DeviceNode]:
    """The device nodes the container is created with (OCI ``linux.devices``)."""
    return [DeviceNode(d.path, d.type, d.major, d.minor) for d in container.linux.devices]


def resized(facts: ContainerFacts, resources: pb.LinuxResources) -> ContainerFacts:
    """The container's facts with the limits of an UpdateContainer request. The runtime sends
    the CPU and memory wrappers even when they hold 0 and only applies non-zero values (fact
    sheet §6.2), so a 0 keeps the current value."""
    cpu, memory = resources.cpu, resources.memory

    def pick(new: int, old: int | None) -> int | None:
        return new if new else old

    return ContainerFacts(
        id=facts.id, sandbox_id=facts.sandbox_id, name=facts.name,
        cpu_shares=pick(cpu.shares.value, facts.cpu_shares),
        cpu_quota=pick(cpu.quota.value, facts.cpu_quota),
        cpu_period=pick(cpu.period.value, facts.cpu_period),
        memory_limit=pick(memory.limit.value, facts.memory_limit),
        cpus=facts.cpus, mems=facts.mems, hugepages=facts.hugepages, devices=facts.devices)


def _cpu(cpus: CPUSet, mems: CPUSet | None) -> pb.LinuxCPU:
    # An empty string means "leave as is" to the runtime: mems stay untouched unless we pin them.
    return pb.LinuxCPU(cpus=cpus.format(), mems="" if mems is None else mems.format())


def adjustment(placement: Placement) -> pb.ContainerAdjustment:
    """The adjustment that gives a new container its cpuset. It carries no CFS quota: the
    runtime's record keeps the kubelet's (decision 54)."""
    return pb.ContainerAdjustment(linux=pb.LinuxContainerAdjustment(
        resources=pb.LinuxResources(cpu=_cpu(placement.cpus, placement.mems))))


def container_update(container_id: str, cpus: CPUSet, mems: CPUSet | None) -> pb.ContainerUpdate:
    """A live cpuset change of one existing container; no quota, so the one the kubelet's
    request carries stays (decision 54)."""
    return _update(container_id, _cpu(cpus, mems))


def _update(container_id: str, cpu: pb.LinuxCPU) -> pb.ContainerUpdate:
    # The message copies ``cpu``: one LinuxCPU may serve many updates.
    return pb.ContainerUpdate(container_id=container_id, linux=pb.LinuxContainerUpdate(
        resources=pb.LinuxResources(cpu=cpu)))


def updates(changes: Iterable[ContainerUpdate]) -> list[pb.ContainerUpdate]:
    # A shared-pool change gives every shared container the same cpuset: format it once.
    cpu: dict[tuple[CPUSet, CPUSet | None], pb.LinuxCPU] = {}
    result = []
    for change in changes:
        key = (change.cpus, change.mems)
        if key not in cpu:
            cpu[key] = _cpu(change.cpus, change.mems)
        result.append(_update(change.container_id, cpu[key]))
    return result

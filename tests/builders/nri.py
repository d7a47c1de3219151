"""NRI messages as containerd sends them: pod sandboxes and containers (``nri_pb2``)."""

from __future__ import annotations

from collections.abc import Mapping

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_core import DEFAULT_PIN_ANNOTATION

PERIOD = 100_000


def pod(name: str, *, qos: str = "guaranteed", pins: str | None = None,
        annotations: Mapping[str, str] | None = None) -> pb.PodSandbox:
    """Pod sandbox ``name`` (id ``sb-<name>``, namespace "ns") of QoS "guaranteed" or
    "burstable" (cgroupfs parent); ``pins`` sets the default pin annotation, ``annotations``
    any others."""
    parent = {"guaranteed": f"/kubepods/pod{name}",
              "burstable": f"/kubepods/burstable/pod{name}"}[qos]
    annotations = {**(annotations or {}),
                   **({DEFAULT_PIN_ANNOTATION: pins} if pins is not None else {})}
    return pb.PodSandbox(id=f"sb-{name}", name=name, namespace="ns", uid=f"uid-{name}",
                         annotations=annotations, linux=pb.LinuxPodSandbox(cgroup_parent=parent))


def container(name: str, p: pb.PodSandbox, *, cpus: int | None = None,
              cpuset: str = "") -> pb.Container:
    """Container ``name`` of ``p`` (id ``id-<name>-0123456789``, longer than the short id logs
    show); ``cpus`` whole CPUs of limit, ``cpuset`` the cpuset it runs on ("" = unset)."""
    cpu = pb.LinuxCPU(cpus=cpuset)
    if cpus is not None:
        cpu.quota.value = cpus * PERIOD
        cpu.period.value = PERIOD
        cpu.shares.value = cpus * 1024
    return pb.Container(id=f"id-{name}-0123456789", pod_sandbox_id=p.id, name=name,
                        linux=pb.LinuxContainer(resources=pb.LinuxResources(cpu=cpu)))

"""The CPU limit a kubelet reports in a container's ``status.resources``, derived the way a real
kubelet derives it from the runtime's CRI ``ContainerStatus`` (issue 44).

Modelled on kubernetes/kubernetes (the stored tree of commit b94367c, v1.33+):

* ``pkg/kubelet/kuberuntime/kuberuntime_container.go``, ``toKubeContainerStatus``: with
  ``InPlacePodVerticalScaling`` the CRI status's ``resources`` go through
  ``toKubeContainerResources`` (``kuberuntime_container_linux.go``): a CPU limit only when
  ``cpu_period > 0`` and ``quotaToMilliCPU(cpu_quota, cpu_period) > 0``
  (``helpers_linux.go``: ``quota == -1`` gives 0, else ``quota * 1000 / period``). No quota
  (-1, or 0) means *no limit reported*.
* ``pkg/kubelet/kubelet_pods.go``, ``convertToAPIContainerStatuses`` →
  ``convertContainerStatusResources``: a reported CPU limit is taken as is; without one,
  ``determineResource`` takes the *previous status's* value while the previous status is of
  the same container and was running, the spec's when it was not (or is another container),
  and nothing without a previous status.

So a container whose runtime reports quota -1 keeps the limit of its last report for as long
as it runs: after an in-place resize its status still says the old limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpuset_adapters.cri.results import Resources


@dataclass(frozen=True, slots=True)
class ReportedCpu:
    """A container's ``status.resources.limits.cpu`` in millicores (``None``: absent), and
    whether that status was of a running container (what the next report's rule looks at)."""

    container_id: str
    limit_millis: int | None
    running: bool


def runtime_cpu_limit(resources: Resources | None) -> int | None:
    """``toKubeContainerResources``: the CPU limit (millicores) the runtime's CRI status
    gives, or ``None`` when it gives none (no resources, no period, quota -1 or 0)."""
    if resources is None or resources.cpu_period <= 0:
        return None
    if resources.cpu_quota == -1:  # quotaToMilliCPU: "no limit" is 0
        return None
    millis = resources.cpu_quota * 1000 // resources.cpu_period
    return millis if millis > 0 else None


def reported_cpu_limit(container_id: str, runtime: Resources | None, *, spec_millis: int | None,
                       previous: ReportedCpu | None, running: bool = True) -> ReportedCpu:
    """The status the kubelet writes for a container now: the runtime's limit if it gives
    one, else ``determineResource``'s choice between the previous status and the spec."""
    limit = runtime_cpu_limit(runtime)
    if limit is None and previous is not None:
        if not previous.running or previous.container_id != container_id:
            limit = spec_millis
        else:
            limit = previous.limit_millis
    return ReportedCpu(container_id=container_id, limit_millis=limit, running=running)


def quantity(millis: int | None) -> str | None:
    """Millicores as the API server prints a CPU quantity: ``"2"``, ``"1500m"``."""
    if millis is None:
        return None
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"

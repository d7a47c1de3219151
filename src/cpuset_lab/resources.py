"""The resources a kubelet derives from Kubernetes quantities: CPU and memory quantities as
millicores and bytes, and a container's ``LinuxContainerResources``."""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Final

from cpuset_adapters import kubelet
from cpuset_adapters.cri.results import Resources

DEFAULT_CPU_PERIOD: Final = kubelet.CFS_PERIOD


_MILLI = re.compile(r"([0-9]+)m")
_MEMORY = re.compile(r"([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?")
_MEMORY_UNITS: Final = {None: 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
                        "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def milli_cpus(cpus: float | int | str | Decimal) -> int:
    """A CPU quantity in millicores: ``2`` -> 2000, ``0.5`` -> 500, ``"250m"`` -> 250.

    Like Kubernetes, fractions below a millicore round up.
    """
    if isinstance(cpus, str):
        text = cpus.strip()
        if match := _MILLI.fullmatch(text):
            return int(match.group(1))
        try:
            value = Decimal(text)
        except InvalidOperation:
            raise ValueError(f"not a CPU quantity: {cpus!r}") from None
    else:
        value = Decimal(str(cpus))
    if not value.is_finite() or value < 0:
        raise ValueError(f"not a CPU quantity: {cpus!r}")
    milli = value * 1000
    return int(milli.to_integral_value(rounding=ROUND_CEILING))


def memory_bytes(memory: int | str) -> int:
    """A memory quantity in bytes: ``134217728``, ``"128Mi"``, ``"1G"``."""
    if isinstance(memory, int):
        if memory < 0:
            raise ValueError(f"negative memory quantity: {memory}")
        return memory
    match = _MEMORY.fullmatch(memory.strip())
    if not match:
        raise ValueError(f"not a memory quantity: {memory!r}")
    value = Decimal(match.group(1)) * _MEMORY_UNITS[match.group(2)]
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def container_resources(
    *,
    cpu_request: float | int | str | Decimal | None = None,
    cpu_limit: float | int | str | Decimal | None = None,
    memory_limit: int | str | None = None,
    cpu_period: int = DEFAULT_CPU_PERIOD,
) -> Resources:
    """What a kubelet puts in a container's ``LinuxContainerResources`` for these quantities.

    shares = max(2, milli * 1024 / 1000) of the request (the limit when there is no request),
    quota = max(1000, milli * period / 1000) of the limit (0 = unlimited), period = 100000.
    A Guaranteed container with N whole CPUs gets quota = N * period and shares = N * 1024.
    """
    request = cpu_request if cpu_request is not None else cpu_limit
    shares = kubelet.cpu_shares(milli_cpus(request) if request is not None else None)
    quota = 0
    if cpu_limit is not None and (milli := milli_cpus(cpu_limit)):
        quota = kubelet.cpu_quota(milli, cpu_period)
    memory = memory_bytes(memory_limit) if memory_limit is not None else 0
    return Resources(cpu_period=cpu_period, cpu_quota=quota, cpu_shares=shares,
                     memory_limit=memory)


def guaranteed(cpus: float | int | str | Decimal, memory: int | str) -> Resources:
    """Resources of a Guaranteed container (request == limit for CPU and memory)."""
    return container_resources(cpu_request=cpus, cpu_limit=cpus, memory_limit=memory)

"""Why a quiet-CPU request was not given is kept per live container (``inspect`` shows it) and
forgotten once the container is gone."""

from __future__ import annotations

from cpuset_core import CpusetEngine, Settings
from cpuset_service.placement import PlacementService
from tests.builders.facts import container, pod
from tests.unit.core.topologies import DUAL_SOCKET
from tests.unit.service.quiet_fakes import QUIET, FakeNode


def test_the_reason_is_kept_while_the_container_lives() -> None:
    service = PlacementService(CpusetEngine(DUAL_SOCKET, Settings()))
    service.quiet.node = FakeNode(why=["interrupts: /proc/irq is read-only here",
                                       "idle states: cpuidle of CPU(s) 0,8 is read-only here"])
    quiet, plain = pod("dpdk", annotations=QUIET), pod("web")
    service.admit(quiet, container("q", quiet, cpu_limit=2))
    service.admit(plain, container("w", plain, cpu_limit=2))
    assert service.quiet.unmet == {"q": "interrupts: /proc/irq is read-only here; idle states: "
                                         "cpuidle of CPU(s) 0,8 is read-only here"}
    service.remove("q", "ns/dpdk/main")
    service.quiet.wanted(service.ledger)
    assert service.quiet.unmet == {}

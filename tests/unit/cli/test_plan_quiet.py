"""``nri-cpuset plan --pods`` keeps each container's quiet-CPU request in its step (JSON
``quiet``: the keys and what they ask), ignores a shared container's (its reason says why) and
refuses one from a namespace that may not pin, as the daemon does."""

from __future__ import annotations

from pathlib import Path

from tests.builders.kube import container, kube_list, pod
from tests.unit.cli.plan_pods_support import cpus, invoke, steps

QUIET = {"irq-load-balancing.crio.io": "disable", "cpu-c-states.crio.io": "max_latency:10"}


def test_a_quiet_request_is_kept_in_its_step(machine: Path) -> None:
    result = invoke(machine, kube_list(
        pod("dpdk", cpus("app", "2"), annotations=QUIET),
        pod("web", container("app", requests={"cpu": "500m"}), annotations=QUIET),
        pod("plain", cpus("app", "2"))), "-o", "json")
    assert result.exit_code == 0, result.output
    dpdk, web, plain = steps(result)
    assert dpdk["quiet"] == {"keys": ["irq-load-balancing.crio.io", "cpu-c-states.crio.io"],
                             "asks": "interrupts off, idle states over 10 µs off"}
    assert web["quiet"] is None
    assert "quiet CPUs ignored (irq-load-balancing.crio.io, cpu-c-states.crio.io): no " \
           "exclusive CPUs" in web["reason"]
    assert plain["quiet"] is None

"""Other containers' cpusets on a real containerd 1.7.24, with the kernel fast path
(``runtime.kernel_updates``) on and off: when an integer or pinned container's start returns,
every running shared container is already off its CPUs; when it is gone, the pool is back on
every one of them; and the runtime's own record (CRI ContainerStatus) follows the kernel.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters.cgroup_writer import BALANCE_FLAG
from cpuset_adapters.cgroupfs import CGROUP_ROOT, cgroup_dir, cgroup_version
from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from tests.e2e.plugin_harness import (
    ONLINE,
    Plugin,
    cpus,
    integer,
    needs_two_cpus,
    pod,
    records_follow,
    serving,
    shared,
    wait_until,
)

pytestmark = pytest.mark.e2e

SHARED = 4


@pytest.fixture(params=[True, False], ids=["kernel-first", "runtime-only"])
def fast_path(request: pytest.FixtureRequest) -> bool:
    on: bool = request.param
    return on


@pytest.fixture
def plugin(lab: LabContainerd, cri: KubeletClient, tmp_path: Path,
           fast_path: bool) -> Iterator[Plugin]:
    config = tmp_path / "config.toml"
    config.write_text(f"[runtime]\nkernel_updates = {str(fast_path).lower()}\n"
                      '[observability]\nlog_format = "console"\nlisten = ""\n')
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--config", str(config)))) as running:
        yield running


def on_cpus(cri: KubeletClient, ids: list[str], expected: CPUSet) -> list[str]:
    """The containers of ``ids`` whose kernel cpuset is not ``expected``, with what it is."""
    return [f"{cid[:12]}={cpus(cri, cid)}" for cid in ids if cpus(cri, cid) != expected]


@needs_two_cpus
def test_shared_containers_are_off_a_new_exclusive_containers_cpus_when_its_start_returns(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, fast_path: bool) -> None:
    path = "kernel first" if fast_path else "through the runtime only"
    assert f"other containers' cpuset updates: {path}" in plugin.text()
    last = ONLINE.last()
    with (pod(cri, "w0", QosClass.BURSTABLE) as w0, pod(cri, "w1", QosClass.BURSTABLE) as w1,
          pod(cri, "w2", QosClass.BURSTABLE) as w2, pod(cri, "w3", QosClass.BURSTABLE) as w3):
        apps = [shared(cri, lab, p) for p in (w0, w1, w2, w3)]
        assert len(apps) == SHARED
        assert on_cpus(cri, apps, ONLINE) == []

        with pod(cri, "db", QosClass.GUARANTEED) as db:
            pg = integer(cri, lab, db, 1)
            mine = cpus(cri, pg)  # read right after StartContainer returned
            assert len(mine) == 1
            assert on_cpus(cri, apps, ONLINE - mine) == []
            records_follow(plugin, lab, cri, dict.fromkeys(apps, ONLINE - mine))
        wait_until(lambda: on_cpus(cri, apps, ONLINE) == [], "the pool to grow back")

        with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
            pinned = shared(cri, lab, io, "io")
            assert cpus(cri, pinned) == CPUSet([last])
            assert on_cpus(cri, apps, ONLINE - CPUSet([last])) == []
        wait_until(lambda: on_cpus(cri, apps, ONLINE) == [], "the pool to grow back")
        records_follow(plugin, lab, cri, dict.fromkeys(apps, ONLINE))
    if fast_path:
        assert "kernel write refused" not in plugin.text()


def balance_flag(cri: KubeletClient, cid: str) -> Path:
    """The container's cgroup v1 ``cpuset.sched_load_balance``."""
    path = cri.container_status(cid).cgroups_path
    assert path is not None
    return cgroup_dir(path, controller="cpuset") / BALANCE_FLAG


@needs_two_cpus
def test_running_shared_containers_are_readied_before_a_creation_needs_them(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, fast_path: bool) -> None:
    """Decision 63: what a container's first kernel write would do besides writing (on
    cgroup v1, clearing its balance flag: a domain rebuild) is done when it starts, and for
    every running one when the plugin synchronizes, not on the next integer creation's
    answer. Only with the fast path on; read from the kernel's own files."""
    root_flag = CGROUP_ROOT / "cpuset" / BALANCE_FLAG
    if cgroup_version(CGROUP_ROOT) != 1 or root_flag.read_text().strip() != "1":
        pytest.skip("balance flags are cleared only on cgroup v1 with a balancing root")
    with pod(cri, "w0", QosClass.BURSTABLE) as w0:
        flag = balance_flag(cri, shared(cri, lab, w0))
        if not fast_path:
            assert flag.read_text().strip() == "1"  # nothing readies it
            return
        wait_until(lambda: flag.read_text().strip() == "0", "the started container readied")
        plugin.stop()
        flag.write_text("1")  # as a fresh cgroup has it: the plugin must not trust a memory
        plugin.start()
        plugin.wait_synchronized(2)
        wait_until(lambda: flag.read_text().strip() == "0",
                   "the running container readied after the Synchronize")

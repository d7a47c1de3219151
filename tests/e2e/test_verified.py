"""Verified placements on the real runtime: what containerd drops or someone changes behind the
plugin's back is found in the kernel's cgroup files and repaired by the verifier.

Times are printed, not asserted against a target (that is the benchmark's job); each wait is
bounded so a plugin that never repairs fails instead of hanging.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from cpuset_adapters import cgroupfs
from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from tests.e2e.test_plugin import (
    ONLINE,
    Plugin,
    cpus,
    inspect_state,
    needs_two_cpus,
    plugin,
    pod,
    shared,
    wait_until,
)

__all__ = ["plugin"]  # the fixture, imported so pytest finds it here

pytestmark = pytest.mark.e2e

REPEATS = int(os.environ.get("NRI_CPUSET_BURST_REPEATS", "20"))
BURST = 30
WORKERS = 3


@needs_two_cpus
def test_a_pin_arriving_mid_burst_leaves_no_shared_container_on_its_cpu(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    """30 shared containers created by 3 workers while a pinned pod is created mid-burst: the
    pin's answer carries the shrink of every running shared container, and containerd drops
    it for those being started at that moment. After the burst every shared container must be
    off the pinned CPU, in every repetition."""
    last = ONLINE.last()
    pool = ONLINE - CPUSet([last])
    converged: list[float] = []
    for repeat in range(REPEATS):
        pods = [cri.run_pod(PodSpec(name=f"burst-{repeat}-{n}", namespace="burst", uid=uid,
                                    cgroup_parent=cgroup_parent(QosClass.BURSTABLE, uid)))
                for n, uid in enumerate(str(n) + os.urandom(6).hex() for n in range(BURST))]
        with ThreadPoolExecutor(WORKERS) as workers:
            first = list(workers.map(lambda p: shared(cri, lab, p), pods[:BURST // 2]))
            with pod(cri, f"io-{repeat}", QosClass.BURSTABLE, pins=str(last)) as io:
                later = workers.map(lambda p: shared(cri, lab, p), pods[BURST // 2:])
                shared(cri, lab, io, "io")  # the pin, while the workers create the rest
                ids = first + list(later)
                ended = time.monotonic()
                def off_the_pin(ids: list[str] = ids) -> bool:
                    return all(cpus(cri, cid) == pool for cid in ids)

                wait_until(off_the_pin,
                           f"repetition {repeat}: every shared container off CPU {last}")
                converged.append(time.monotonic() - ended)
        for pod_id in pods:
            cri.stop_pod(pod_id)
            cri.remove_pod(pod_id)
    print(f"converged after the burst, {REPEATS} repetitions: max {max(converged):.3f} s, "
          f"each {[round(t, 3) for t in converged]}")
    stats = inspect_state(plugin.status)["stats"]
    print(f"verifier: {stats}")
    assert stats["verify_passes"] > 0


@needs_two_cpus
def test_an_out_of_band_change_next_to_a_pin_is_undone_within_the_verifiers_period(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    last = ONLINE.last()
    with pod(cri, "web", QosClass.BURSTABLE) as web, \
            pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
        app = shared(cri, lab, web)
        shared(cri, lab, io, "io")
        assert cpus(cri, app) == ONLINE - CPUSet([last])
        path = cri.container_status(app).cgroups_path
        assert path is not None
        directory = cgroupfs.cgroup_dir(path)
        (directory / "cpuset.cpus").write_text(ONLINE.format())  # echo 0-1 > .../cpuset.cpus
        assert cpus(cri, app) == ONLINE
        changed = time.monotonic()
        wait_until(lambda: cpus(cri, app) == ONLINE - CPUSet([last]),
                   "the verifier to undo the change", timeout=15.0)
        print(f"out-of-band change undone after {time.monotonic() - changed:.2f} s")
        stats = inspect_state(plugin.status)["stats"]
        assert stats["verify_drift_found"] >= 1
        wait_until(lambda: inspect_state(plugin.status)["stats"]["verify_drift_repaired"] >= 1,
                   "a later pass to see it repaired", timeout=15.0)

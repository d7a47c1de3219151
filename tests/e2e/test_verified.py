"""Verified placements on the real runtime: what containerd drops or someone changes behind the
plugin's back is found in the kernel's cgroup files and repaired by the verifier, and a shrink
or move the runtime refuses (the lab's ``runc-faulty`` handler makes runc's updates fail) never
lets another exclusive container get the CPUs it kept.

Times are printed, not asserted against a target (that is the benchmark's job); each wait is
bounded so a plugin that never repairs fails instead of hanging.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cpuset_adapters import cgroupfs
from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab import faulty_runc
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.resources import guaranteed
from tests.e2e.plugin_harness import (
    ONLINE,
    Plugin,
    cpus,
    inspect_state,
    integer,
    needs_two_cpus,
    pod,
    serving,
    shared,
    wait_until,
)

FAULTY = faulty_runc.HANDLER
REFUSED = "needs 1 exclusive CPU(s) but only 0 are free"

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
                   "the verifier to undo the change")
        print(f"out-of-band change undone after {time.monotonic() - changed:.2f} s")
        stats = inspect_state(plugin.status)["stats"]
        assert stats["verify_drift_found"] >= 1
        wait_until(lambda: inspect_state(plugin.status)["stats"]["verify_drift_repaired"] >= 1,
                   "a later pass to see it repaired")


# -- updates the runtime refuses -------------------------------------------------------------


@pytest.fixture
def quick(lab: LabContainerd, cri: KubeletClient, tmp_path: Path) -> Iterator[Plugin]:
    """The plugin with a verifier pass every second (``runtime.verify_period = 1``), so that
    five passes (unrepairable) and a repair fit in a test, and every update through the
    runtime (``kernel_updates = false``): these tests make the runtime refuse them, while the
    kernel fast path would write other containers' cpusets itself (test_kernel_first.py)."""
    config = tmp_path / "config.toml"
    config.write_text('[runtime]\nverify_period = 1\nkernel_updates = false\n'
                      '[observability]\nlog_format = "console"\n')
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--config", str(config)))) as running:
        yield running


def state(plugin: Plugin) -> dict[str, Any]:
    return inspect_state(plugin.status)


def owner(plugin: Plugin, container_id: str) -> CPUSet:
    """The CPUs the plugin's ledger gives ``container_id``."""
    (view,) = [c for c in state(plugin)["containers"] if c["id"] == container_id]
    return CPUSet.parse(view["cpus"])


def refused(cri: KubeletClient, lab: LabContainerd, pod_id: str) -> str:
    """Create a 1-CPU integer container in ``pod_id``, which must be refused: the error."""
    with pytest.raises(CriError) as caught:
        integer(cri, lab, pod_id, 1, "app")
    assert cri.list_containers(pod_id) == []
    return caught.value.details


@needs_two_cpus
def test_a_failed_shrink_never_lets_another_container_get_the_cpus_it_kept(
        quick: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    """An integer container resized from 2 CPUs to 1 whose runtime refuses the update keeps
    running on both: the CPU it gave up is free in the ledger, but draining, so the next
    integer container is refused with the plugin's error (no other exclusive owner shares it
    with the one still there). Once the runtime takes the shrink (the verifier re-sends it)
    and a pass sees it in the kernel, the CPU goes to the next integer container."""
    with pod(cri, "big", QosClass.GUARANTEED, runtime_handler=FAULTY) as big, \
            pod(cri, "db", QosClass.GUARANTEED) as db:
        pg = integer(cri, lab, big, 2, "postgres")
        assert cpus(cri, pg) == ONLINE
        lab.update_faults.fail(pg)
        with pytest.raises(CriError) as caught:  # the kubelet's resize: runc refuses it
            cri.update_resources(pg, guaranteed(1, "64Mi"))
        assert f"{faulty_runc.REFUSAL} {pg}" in caught.value.details
        kept = owner(quick, pg)
        given_up = ONLINE - kept
        assert len(kept) == 1
        assert cpus(cri, pg) == ONLINE  # the kernel: the shrink did not happen
        assert state(quick)["draining"] == given_up.format()

        assert REFUSED in refused(cri, lab, db)
        assert cpus(cri, pg) == ONLINE
        wait_until(lambda: state(quick)["stats"]["verify_drift_unrepairable"] >= 1,
                   "the verifier to give the shrink up as unrepairable")
        assert state(quick)["kernel_drift"][pg].startswith(
            f"cpus {kept} expected, {ONLINE} enforced")
        assert REFUSED in refused(cri, lab, db)  # still: the kernel still shows it there

        lab.update_faults.allow(pg)
        allowed = time.monotonic()
        wait_until(lambda: cpus(cri, pg) == kept, "the re-sent shrink to land")
        landed = time.monotonic() - allowed
        wait_until(lambda: state(quick)["draining"] == "", "a pass to see it left the CPU")
        app = integer(cri, lab, db, 1, "app")
        assert cpus(cri, app) == given_up
        assert cpus(cri, pg) == kept
        # The shrink the runtime finally applied, and any record riding on app's answer, wrote
        # the record's CFS quota back into pg's cgroup too (decision 54): the next pass lifts
        # it, so no drift is left once a pass has looked.
        wait_until(lambda: state(quick)["kernel_drift"] == {}, "no drift left after a pass")
        print(f"shrink landed {landed:.2f} s after the runtime accepted updates again")


@needs_two_cpus
def test_a_failed_move_off_a_pin_keeps_the_cpu_from_other_exclusive_containers_after_the_pin(
        quick: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    """A pin on an integer container's CPU moves it (an update on the pin's answer, then the
    verifier's re-sends by UpdateContainers in the background): the runtime refuses them all,
    so it stays on the pinned CPU. When the pin leaves, that CPU is free in the ledger but no
    integer container gets it while the moved one still runs there; once the move lands, one
    does."""
    with pod(cri, "db", QosClass.GUARANTEED, runtime_handler=FAULTY) as db:
        pg = integer(cri, lab, db, 1, "postgres")
        taken = cpus(cri, pg)
        lab.update_faults.fail(pg)
        with pod(cri, "io", QosClass.BURSTABLE, pins=taken.format()) as io:
            pinned = shared(cri, lab, io, "io")
            assert cpus(cri, pinned) == taken  # the pin starts at once
            moved_to = owner(quick, pg)
            assert moved_to == ONLINE - taken
            assert cpus(cri, pg) == taken  # the move failed
            wait_until(lambda: state(quick)["stats"]["update_failures"] >= 1,
                       "a background UpdateContainers of the move to fail")
        assert "NRI update of some containers failed" in quick.text()
        assert state(quick)["draining"] == taken.format()
        assert cpus(cri, pg) == taken
        with pod(cri, "next", QosClass.GUARANTEED) as after:
            assert REFUSED in refused(cri, lab, after)
            lab.update_faults.allow(pg)
            wait_until(lambda: cpus(cri, pg) == moved_to, "the re-sent move to land")
            wait_until(lambda: state(quick)["draining"] == "", "a pass to see it left the CPU")
            app = integer(cri, lab, after, 1, "app")
            assert cpus(cri, app) == taken
            assert cpus(cri, pg) == moved_to


@needs_two_cpus
def test_a_shared_containers_shrink_refused_at_admission_is_reported_and_lands_later(
        quick: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    """What the plugin cannot prevent on containerd 1.7 and 2.1: a shared container's shrink
    rides on the answer to an integer container's CreateContainer, and containerd only logs its
    failure ("pre-create update failed") and creates the integer container on the CPU the shared
    one still runs on (docs/decisions.md, item 15). The plugin finds it at the next pass,
    re-sends it, reports it unrepairable while the runtime refuses, and the shrink lands within
    a verifier period once the runtime takes it; the integer container keeps its CPU."""
    with pod(cri, "web", QosClass.BURSTABLE, runtime_handler=FAULTY) as web, \
            pod(cri, "db", QosClass.GUARANTEED) as db:
        app = shared(cri, lab, web)
        assert cpus(cri, app) == ONLINE
        lab.update_faults.fail(app)
        pg = integer(cri, lab, db, 1, "postgres")  # created: the failure is only logged
        mine = cpus(cri, pg)
        pool = ONLINE - mine
        assert len(mine) == 1
        assert "pre-create update failed" in lab.config.log_path.read_text()
        assert cpus(cri, app) == ONLINE  # still on the integer container's CPU
        assert state(quick)["exclusive"] == {mine.format(): pg}
        assert state(quick)["shared_pool"] == pool.format()
        wait_until(lambda: state(quick)["stats"]["verify_drift_unrepairable"] >= 1,
                   "the verifier to report the shrink unrepairable")
        assert state(quick)["kernel_drift"][app].startswith(
            f"cpus {pool} expected, {ONLINE} enforced")
        assert "drift unrepairable container=default/web/app" in quick.text()

        lab.update_faults.allow(app)
        allowed = time.monotonic()
        wait_until(lambda: cpus(cri, app) == pool, "the re-sent shrink to land")
        print(f"shrink landed {time.monotonic() - allowed:.2f} s after the runtime accepted "
              f"updates again")
        wait_until(lambda: state(quick)["kernel_drift"] == {}, "a pass to see it repaired")
        assert cpus(cri, pg) == mine

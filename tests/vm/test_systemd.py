"""systemd as PID 1 and the systemd cgroup driver, as production nodes run them: containerd is
``containerd.service`` with ``SystemdCgroup = true``, pods get the kubelet's systemd-driver
slices, and every container is a ``cri-containerd-<id>.scope`` whose ``AllowedCPUs`` systemd
re-applies on ``daemon-reload``.

Every container costs runc, D-Bus and systemd work under emulation, so one set of pods (a pin,
an integer container and the session's shared ``web/app``) serves the whole module, in file
order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_lab import cgroups
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import container_resources, guaranteed
from tests.vm import kernel, units
from tests.vm.runtime import (
    RESULTS,
    Guest,
    Pods,
    consistency_problems,
    wait_consistent,
    wait_until,
)

VERIFY_WAIT = 15
"""Host seconds (scaled) a placement may stay wrong: the verifier's 5 s period, a pass, and
runc updating the scope through systemd, which is slow under emulation."""


@dataclass
class Placed:
    pods: Pods
    pin: CPUSet
    io_pod: str
    io: str
    """A Burstable pod's container pinned to ``pin``."""
    db: str
    """A Guaranteed pod's container asking 2 whole CPUs."""
    uids: dict[str, str]
    """container id -> its pod's uid."""


@pytest.fixture(scope="module")
def placed(guest: Guest) -> Iterator[Placed]:
    mine = Pods(guest)
    pin = CPUSet([kernel.online().last()])
    io_pod = mine.pod("io", QosClass.BURSTABLE, pins=pin.format())
    io = mine.container(io_pod, "app", container_resources(cpu_request="100m"))
    db_pod = mine.pod("db", QosClass.GUARANTEED)
    db = mine.container(db_pod, "app", guaranteed(2, "64Mi"))
    uids = {cid: guest.cri.pod_config(pod).metadata.uid for cid, pod in ((io, io_pod),
                                                                         (db, db_pod))}
    wait_consistent(guest)
    try:
        yield Placed(pods=mine, pin=pin, io_pod=io_pod, io=io, db=db, uids=uids)
    finally:
        mine.remove_all()


def allowed_is_enforced(guest: Guest) -> list[str]:
    """The plugin's containers whose scope's ``AllowedCPUs`` is not what the kernel enforces."""
    return units.allowed_not_enforced(
        guest.cri, [(entry["subject"], entry["id"]) for entry in guest.state()["containers"]])


def wait_right(guest: Guest, why: str, *also: str) -> None:
    """Until the kernel enforces the plugin's state and systemd's units agree with it; how
    long that took (guest seconds, emulated) goes to ``systemd-waits.txt`` in the results."""
    started = time.monotonic()
    def problems() -> list[str]:
        try:
            return consistency_problems(guest) + allowed_is_enforced(guest)
        except (AssertionError, OSError) as exc:  # e.g. a scope without cpuset files
            return [f"unreadable: {exc!r}"]

    wait_until(lambda: not problems(),
               lambda: f"{why}: every placement right\n  " + "\n  ".join(
                   problems() + [units.describe(guest.cri, cid) for cid in also]),
               VERIFY_WAIT)
    with (RESULTS / "systemd-waits.txt").open("a") as out:
        out.write(f"{why}: right after {time.monotonic() - started:.1f} s\n")


def test_containers_run_in_scopes_under_the_kubelets_slices_classified_from_them(
        guest: Guest, placed: Placed) -> None:
    for cid, tier in ((placed.db, ""), (placed.io, "burstable")):
        pid = guest.cri.container_status(cid).pid
        assert pid is not None
        assert units.process_cgroup(pid) == units.expected_cgroup(tier, placed.uids[cid], cid)
    kinds = {entry["id"]: (entry["kind"], entry["cpus"]) for entry in guest.state()["containers"]}
    kind, cpus = kinds[placed.db]
    assert kind == "integer", kinds  # Guaranteed, read from kubepods-pod<uid>.slice
    assert CPUSet.parse(cpus) in kernel.cores(), cpus
    assert kinds[placed.io][0] == "annotated", kinds
    assert kinds[guest.web][0] == "shared", kinds
    assert kernel.placement(guest.cri, placed.io).cpus == placed.pin
    assert not allowed_is_enforced(guest)


def test_the_verifier_repairs_an_out_of_band_write_to_a_scopes_cpuset(
        guest: Guest, placed: Placed) -> None:
    pid = guest.cri.container_status(placed.db).pid
    assert pid is not None
    cpuset = units.CGROUP / units.process_cgroup(pid).lstrip("/") / "cpuset.cpus"
    cpuset.write_text(kernel.online().format())
    assert kernel.placement(guest.cri, placed.db).cpus == kernel.online()
    wait_right(guest, "the verifier to repair the integer container's scope", placed.db)


def test_systemctl_daemon_reload_leaves_every_placement_right(
        guest: Guest, placed: Placed) -> None:
    units.systemctl("daemon-reload")
    wait_right(guest, "after systemctl daemon-reload")


def test_systemctl_restart_containerd_leaves_every_placement_right(
        guest: Guest, placed: Placed) -> None:
    guest.lab.restart()
    guest.plugin.wait_synchronized(60)
    wait_right(guest, "after systemctl restart containerd")


def test_a_shared_container_created_while_the_plugin_was_down_is_moved_off_the_pin(
        guest: Guest, placed: Placed) -> None:
    guest.plugin.kill()
    late = placed.pods.shared("late")
    pid = guest.cri.container_status(late).pid
    assert pid is not None
    # Read from the process: whether its scope has cpuset files at all is part of the question.
    unplaced = cgroups.process_affinity(pid).cpus
    assert unplaced == kernel.online(), units.describe(guest.cri, late)  # nobody placed it
    (RESULTS / "late-container.txt").write_text(units.describe(guest.cri, late) + "\n")
    started = time.monotonic()
    guest.plugin.start()
    guest.plugin.wait_synchronized(60)
    with (RESULTS / "systemd-waits.txt").open("a") as out:
        out.write(f"plugin restarted and synchronized after {time.monotonic() - started:.1f} s\n")
    wait_right(guest, "the restarted plugin to move the late shared container", late)
    assert kernel.placement(guest.cri, late).cpus.isdisjoint(placed.pin)


def shared_on(guest: Guest, cpus: CPUSet) -> list[str]:
    """Shared containers the kernel lets run on any of ``cpus``."""
    return [f"{entry['subject']}: {kernel.placement(guest.cri, entry['id']).cpus}"
            for entry in guest.state()["containers"]
            if entry["kind"] == "shared"
            and not kernel.placement(guest.cri, entry["id"]).cpus.isdisjoint(cpus)]


def test_a_daemon_reload_while_the_runtimes_record_catches_up_leaves_every_placement_right(
        guest: Guest, placed: Placed) -> None:
    """The kernel fast path (docs/decisions.md, 29) writes the shared containers' scopes before
    a pin's answer and after a pin leaves, their units' ``AllowedCPUs`` with them (decision
    37); the runtime's record follows later. A ``daemon-reload`` in between must leave every
    placement right: it re-applies the new ``AllowedCPUs`` (or, where systemd could not be
    told, the stale ones, which the verifier puts back); the record follows on the runtime's
    own calls (decision 51).
    ``test_systemd_reload.py`` holds the strict form: no sample on an exclusive CPU at all."""
    guest.cri.stop_pod(placed.io_pod)
    guest.cri.remove_pod(placed.io_pod)
    units.systemctl("daemon-reload")  # the pool's growth is in the kernel, not yet in the units
    wait_right(guest, "the pool back after the pin left, through a daemon-reload")
    again = placed.pods.pinned("io-again", placed.pin.format())
    # Checked before anything else runs: the shrink was the kernel's, before the start returned.
    assert not shared_on(guest, placed.pin), shared_on(guest, placed.pin)
    units.systemctl("daemon-reload")  # the shrink is in the kernel, not yet in the units
    wait_right(guest, "a pin arriving again, through a daemon-reload", again)
    assert not shared_on(guest, placed.pin), shared_on(guest, placed.pin)

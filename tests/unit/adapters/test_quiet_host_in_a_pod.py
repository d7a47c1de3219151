"""Quiet CPUs as the DaemonSet's pod finds the node (issue 43, found by running it): uid 0
without capabilities. The kernel's cpuidle store wants CAP_SYS_ADMIN whatever the file's mode,
so an idle bound goes to the CPU's PM QoS resume latency (test_quiet_pm_qos.py), and where
that file is missing too the request is unmet and says so before any write; a kernel-managed IRQ's
affinity file is mode 0444, refused with EACCES before the kernel's EIO, and is skipped as
kernel-managed all the same."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from cpuset_adapters.quiet import host as quiet_host
from cpuset_adapters.quiet.applier import QuietApplier
from cpuset_adapters.quiet.host import CAP_SYS_ADMIN, QuietHost, capable, kernel_managed
from cpuset_adapters.quiet.journal import QuietJournal
from cpuset_core.cpuset import CPUSet
from cpuset_core.quiet import quiet_state
from cpuset_core.quiet_request import Quiet
from tests.unit.adapters.quiet_trees import ONLINE, holding, node, text

LACKS = ("idle states: disabling one needs CAP_SYS_ADMIN, which this process lacks, and CPU(s) 1 "
         "have no PM QoS resume latency (power/pm_qos_resume_latency_us)")


def status(tmp_path: Path, cap_eff: str) -> Path:
    path = tmp_path / "status"
    path.write_text(f"Name:\tpython3\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff}\n")
    return path


@pytest.mark.parametrize(("cap_eff", "has"), [
    ("0000000000000000", False),        # the DaemonSet's: every capability dropped
    ("000001ffffffffff", True),         # root on the host
    ("0000000000200000", True),         # CAP_SYS_ADMIN alone
    ("0000000000000400", False),        # CAP_NET_BIND_SERVICE alone
])
def test_the_effective_set_says_whether_a_capability_is_held(tmp_path: Path, cap_eff: str,
                                                             has: bool) -> None:
    assert capable(CAP_SYS_ADMIN, status(tmp_path, cap_eff)) is has


def test_a_status_without_an_effective_set_holds_none(tmp_path: Path) -> None:
    (tmp_path / "status").write_text("Name:\tx\n")
    assert capable(CAP_SYS_ADMIN, tmp_path / "status") is False


def test_idle_states_without_cap_sys_admin_nor_pm_qos_are_unmet_saying_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host = node(tmp_path, pm_qos=False)
    monkeypatch.setattr(quiet_host, "capable", lambda _bit: False)
    assert host.why_not(Quiet(irqs=True, idle_limit=0, keys=("k",)), CPUSet((1,))) == [LACKS]
    # With the CPU's PM QoS file the bound goes there: met.
    assert node(tmp_path / "qos").why_not(Quiet(idle_limit=0, keys=("k",)), CPUSet((1,))) == []
    assert host.why_not(Quiet(irqs=True, keys=("k",)), CPUSet((1,))) == []
    # No cpuidle at all is what it says, not a capability.
    assert QuietHost(tmp_path / "proc", tmp_path / "none").why_not(
        Quiet(idle_limit=0, keys=("k",)), CPUSet((1,))) == [
        "idle states: no cpuidle states for CPU(s) 1"]


def test_a_read_only_affinity_file_refused_with_eacces_is_kernel_managed(
        tmp_path: Path) -> None:
    managed = tmp_path / "smp_affinity_list"
    managed.write_text("0-3\n")
    managed.chmod(0o444)
    plain = tmp_path / "plain"
    plain.write_text("0-3\n")
    refused = OSError(errno.EACCES, "Permission denied")
    assert kernel_managed(refused, str(managed))
    assert not kernel_managed(refused, str(plain))  # writable by mode: a real refusal
    assert not kernel_managed(refused, str(tmp_path / "gone"))
    assert kernel_managed(OSError(errno.EIO, "Input/output error"))
    # Root's write to a managed vector on 6.x kernels (seen on this host's virtio disk queue).
    assert kernel_managed(OSError(errno.EPERM, "Operation not permitted"))
    assert not kernel_managed(OSError(errno.ENOSPC, "No space left on device"))


def test_a_pass_skips_an_irq_refused_with_eacces_as_kernel_managed(tmp_path: Path) -> None:
    class NoOverride(QuietHost):
        """Writes as uid 0 without CAP_DAC_OVERRIDE: a 0444 file refuses (EACCES)."""

        def write(self, path: str, value: str) -> None:
            if not Path(path).stat().st_mode & 0o222:
                raise OSError(errno.EACCES, "Permission denied")
            super().write(path, value)

    node(tmp_path)
    (tmp_path / "proc/irq/25/smp_affinity_list").chmod(0o444)
    applier = QuietApplier(NoOverride(tmp_path / "proc", tmp_path / "sys"),
                           QuietJournal(tmp_path / "j.json"))
    report = applier.apply(quiet_state([holding("a", "2", Quiet(irqs=True, keys=("k",)))]),
                           ONLINE)
    assert report.problems == []
    assert [note.split(":")[0] for note in report.skipped] == ["IRQ 25"]
    assert text(tmp_path, "proc/irq/24/smp_affinity_list") == "0-1,3"

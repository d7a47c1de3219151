"""The VM lab's host side without a VM: QEMU options from a shape, the guest's facts, and how a
results directory is judged (no boot, no results, skips and pytest's exit code 5 all fail)."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from cpuset_lab import vm, vm_output
from cpuset_lab.vm_results import Counts, Outcome, boot_again, judge, summary_table
from cpuset_lab.vm_shapes import SHAPES, Node, NvmeDrive, Shape

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest"
errors="{errors}" failures="{failures}" skipped="{skipped}" tests="{tests}" time="1.0">
<testcase classname="tests.vm.test_smt" name="test_ok" time="0.1"/>
{bad}</testsuite></testsuites>"""


def write_results(directory: Path, *, rc: str | None = "0", tests: int = 3, failures: int = 0,
                  skipped: int = 0, booted: bool = True, junit: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    if booted:
        (directory / "timings").write_text("booted 20.5\npytest-start 21\npytest-end 121.5\n")
    if rc is not None:
        (directory / "pytest.rc").write_text(rc + "\n")
    if junit:
        bad = ('<testcase classname="tests.vm.test_smt" name="test_bad" time="0.1">'
               '<skipped message="why"/></testcase>') if skipped else ""
        (directory / "junit.xml").write_text(JUNIT.format(
            errors=0, failures=failures, skipped=skipped, tests=tests, bad=bad))
    return directory


def test_a_guest_whose_script_never_started_did_not_boot(tmp_path: Path) -> None:
    result = judge("default", write_results(tmp_path, booted=False, rc=None, junit=False),
                   wall_s=600, timed_out=False)
    assert result.outcome is Outcome.NOT_BOOTED
    assert not result.ok


def test_a_guest_stopped_at_the_boot_limit_did_not_boot(tmp_path: Path) -> None:
    # CI, 2026-11-28: a default-shape guest's script had not started after 600 s; calling that
    # "timed out" skipped the second boot and printed no console.
    result = judge("default", write_results(tmp_path, booted=False, rc=None, junit=False),
                   wall_s=600, timed_out=True)
    assert result.outcome is Outcome.NOT_BOOTED
    assert "stopped at the boot time limit, 600 s" in result.detail


def test_a_guest_stopped_at_its_limit_after_booting_timed_out(tmp_path: Path) -> None:
    result = judge("default", write_results(tmp_path, rc=None, junit=False), wall_s=2400,
                   timed_out=True)
    assert result.outcome is Outcome.TIMED_OUT
    assert result.boot_s == 20.5


def test_a_guest_that_booted_but_left_no_report_has_no_results(tmp_path: Path) -> None:
    result = judge("default", write_results(tmp_path, rc=None, junit=False), wall_s=60,
                   timed_out=False)
    assert result.outcome is Outcome.NO_RESULTS
    assert result.boot_s == 20.5


def test_a_guest_whose_kernel_reports_a_cpu_stuck_for_minutes_is_stalled(
        tmp_path: Path) -> None:
    class Guest:
        stdout = iter([b"[  80.7] watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [runc:274]\n",
                       b"[ 199.1] watchdog: BUG: soft lockup - CPU#1 stuck for 119s! [runc]\n"])

    stalled = threading.Event()
    with (tmp_path / "console.log").open("wb") as console:
        vm_output.copy_console(Guest(), console, stalled)  # type: ignore[arg-type]
    assert not stalled.is_set()  # a CPU starved for a while under emulation is not a stall
    Guest.stdout = iter([b"[ 220.0] watchdog: BUG: soft lockup - CPU#6 stuck for 120s! [x]\n"])
    with (tmp_path / "console.log").open("ab") as console:
        vm_output.copy_console(Guest(), console, stalled)  # type: ignore[arg-type]
    assert stalled.is_set()
    result = judge("default", write_results(tmp_path, rc=None, junit=False), wall_s=300,
                   timed_out=False, stalled=True)
    assert result.outcome is Outcome.STALLED
    assert result.boot_s == 20.5
    assert not result.ok


def test_passing_tests_pass_with_boot_and_test_times(tmp_path: Path) -> None:
    result = judge("default", write_results(tmp_path), wall_s=130, timed_out=False)
    assert result.ok
    assert (result.boot_s, result.tests_s) == (20.5, 100.5)
    assert result.counts == Counts(tests=3)
    assert "default      passed" in summary_table([result])


@pytest.mark.parametrize(("rc", "tests", "skipped"), [
    ("5", 0, 0),   # pytest ran no test
    ("0", 3, 1),   # a skip in the lab is a failure, whatever pytest's exit code
    ("1", 3, 0),   # pytest itself failed
])
def test_no_test_a_skip_or_a_failing_exit_code_fails_the_shape(
        tmp_path: Path, rc: str, tests: int, skipped: int) -> None:
    result = judge("default", write_results(tmp_path, rc=rc, tests=tests, skipped=skipped),
                   wall_s=130, timed_out=False)
    assert result.outcome is Outcome.FAILED
    assert result.detail


def test_a_memoryless_node_gets_cpus_but_no_memory_backend() -> None:
    shape = Shape(name="t", summary="", tests=(), nodes=(
        Node(cpus="0-3", memory_mib=512), Node(cpus="4-7", memory_mib=0)),
        distances={(0, 1): 12})
    args = " ".join(shape.qemu_args())
    assert "-smp 8,sockets=2,cores=2,threads=2" in args
    assert "-numa node,nodeid=0,cpus=0-3,memdev=ram0" in args
    assert "-numa node,nodeid=1,cpus=4-7 " in args + " "
    assert args.count("memory-backend-ram") == 1
    assert "-numa dist,src=0,dst=1,val=12" in args
    assert shape.facts()["memoryless"] == [1]
    assert shape.facts()["cores"] == ["0-1", "2-3", "4-5", "6-7"]


def test_an_nvme_drive_sits_behind_an_expander_bridge_on_its_node_at_the_address_it_states(
        tmp_path: Path) -> None:
    drive = NvmeDrive(name="nv1", node=1, bus=0x40, chassis=11)
    shape = Shape(name="t", summary="", tests=(), nodes=(
        Node(cpus="0-3", memory_mib=512), Node(cpus="4-7", memory_mib=512)), nvme=(drive,))
    args = shape.qemu_args(tmp_path)
    assert args[args.index("-device", args.index("dist,src=0,dst=1,val=20")):] == [
        "-device", "pxb-pcie,id=pxb-nv1,bus_nr=64,numa_node=1,bus=pcie.0",
        "-device", "pcie-root-port,id=rp-nv1,bus=pxb-nv1,chassis=11,slot=0",
        "-drive", f"if=none,id=nv1,file={tmp_path / 'nv1.img'},format=raw",
        "-device", "nvme,drive=nv1,serial=nv1,bus=rp-nv1"]
    # The bridge's bus 0x40 holds its root port; the controller is on the bus below.
    assert shape.facts()["nvme"] == [
        {"pci": "0000:41:00.0", "numa_node": 1, "driver": "nvme", "serial": "nv1"}]
    with pytest.raises(ValueError, match="image directory"):
        shape.qemu_args()


def test_a_shape_with_nvme_drives_gets_sparse_images_and_the_guest_loads_the_driver(
        tmp_path: Path) -> None:
    default = SHAPES["default"]
    assert sorted(d.node for d in default.nvme) == [0, 1]
    assert len({d.pci_address for d in default.nvme}) == len({d.chassis for d in default.nvme}) == 2
    vm.prepare(default, tmp_path / "r", python="/py", pytest_args=[])
    for drive in default.nvme:
        image = (tmp_path / "r" / f"{drive.name}.img").stat()
        assert image.st_size == drive.size_mib << 20
        assert image.st_blocks == 0  # sparse: nothing written
    assert "MODULES=nvme\n" in (tmp_path / "r" / "guest.env").read_text()
    command = " ".join(vm.vng_command(default, tmp_path / "r", vng="vng", kernel=Path("/k")))
    assert f"file={tmp_path / 'r' / 'nvme-node1.img'}" in command
    vm.prepare(SHAPES["memoryless"], tmp_path / "m", python="/py", pytest_args=[])
    assert "MODULES=''\n" in (tmp_path / "m" / "guest.env").read_text()
    assert not list((tmp_path / "m").glob("*.img"))


def test_every_shape_names_test_modules_that_exist_and_ci_runs_the_default() -> None:
    here = Path(__file__).resolve().parents[2] / "vm"
    for shape in SHAPES.values():
        assert shape.tests
        assert shape.tests[0] == "test_shape.py"
        for module in shape.tests:
            assert (here / module).is_file(), f"{shape.name}: {module}"
        assert shape.memory_mib > 0
        assert len(shape.distances) in (0, len(shape.nodes) * (len(shape.nodes) - 1) // 2)
    assert [s.name for s in SHAPES.values() if s.in_ci] == ["default", "systemd"]


def test_the_guest_command_boots_the_shape_and_runs_the_guest_script(tmp_path: Path) -> None:
    shape = SHAPES["isolcpus"]
    command = vm.vng_command(shape, tmp_path, vng="vng", kernel=Path("/boot/vmlinuz-6.1.0"))
    assert command[:3] == ["vng", "--run", "/boot/vmlinuz-6.1.0"]
    assert "--disable-kvm" in command
    assert "--append=isolcpus=6-7" in command
    assert any(arg.startswith("--append=modprobe.blacklist=") for arg in command)
    assert command[-1].endswith(f"scripts/vm-guest {tmp_path}")
    vm.prepare(shape, tmp_path / "r", python="/py", pytest_args=["-k", "a b"])
    env = (tmp_path / "r" / "guest.env").read_text()
    assert "SHAPE=isolcpus" in env
    assert "PYTEST_ARGS='-k '\"'\"'a b'\"'\"''" in env
    assert "strict_reservation = true" in (tmp_path / "r" / "plugin.toml").read_text()


@pytest.mark.parametrize(("chosen", "told"), [(None, "1.7"), ("2.x", "2.x")])
def test_the_guest_runs_the_containerd_chosen_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: str | None, told: str) -> None:
    if chosen is None:
        monkeypatch.delenv("NRI_CPUSET_RUNTIME", raising=False)
    else:
        monkeypatch.setenv("NRI_CPUSET_RUNTIME", chosen)
    vm.prepare(SHAPES["systemd"], tmp_path / "r", python="/py", pytest_args=[])
    assert f"RUNTIME={told}\n" in (tmp_path / "r" / "guest.env").read_text()


def test_only_the_systemd_shape_boots_systemd_and_tells_the_guest_its_cgroup_driver(
        tmp_path: Path) -> None:
    systemd = SHAPES["systemd"]
    assert systemd.facts()["cgroup_driver"] == "systemd"
    assert "--systemd" in vm.vng_command(systemd, tmp_path, vng="vng", kernel=Path("/k"))
    vm.prepare(systemd, tmp_path / "r", python="/py", pytest_args=[])
    assert "CGROUP_DRIVER=systemd" in (tmp_path / "r" / "guest.env").read_text()
    for shape in SHAPES.values():
        if shape is not systemd:
            assert "--systemd" not in vm.vng_command(shape, tmp_path, vng="vng",
                                                     kernel=Path("/k"))
            assert shape.facts()["cgroup_driver"] == "cgroupfs"


def test_a_systemd_guest_gets_a_virtme_home_whose_fstab_keeps_tmpfiles_from_emptying_tmp(
        tmp_path: Path) -> None:
    import json

    from cpuset_lab.vm_systemd import TMPFILES_TMP, fstab, prepare_home

    home = prepare_home(tmp_path)
    config = json.loads((home / ".config/virtme-ng/virtme-ng.conf").read_text())
    fstab_file = Path(config["systemd"]["fstab"])
    assert fstab_file.parent == tmp_path
    [(source, target, kind, options, *_)] = [
        line.split() for line in fstab_file.read_text().splitlines()]
    assert (target, kind) == (str(TMPFILES_TMP), "none")
    assert {"bind", "nofail"} <= set(options.split(","))
    rules = [line.split() for line in Path(source).read_text().splitlines()
             if line and not line.startswith("#")]
    assert rules == [["d", "/tmp", "1777", "root", "root", "-"]]  # created, never emptied
    # No mount on /tmp itself: it would hide a checkout there (a CI clone) from the guest.
    assert "/tmp " not in fstab_file.read_text()
    assert fstab(Path("/tmp/ci 7/r")).split()[0] == "/tmp/ci\\0407/r"


def test_a_relative_results_directory_is_made_absolute_for_the_guest() -> None:
    args = vm._parser().parse_args(["--results", "build/x"])
    assert args.results == Path("build/x").resolve()
    assert args.results.is_absolute()


def test_the_soaks_tuning_reaches_the_guest_and_nothing_else_of_this_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NRI_CPUSET_VM_SOAK_MINUTES", "10")
    monkeypatch.setenv("NRI_CPUSET_VM_SOAK_SEED", "7 8")
    monkeypatch.setenv("NRI_CPUSET_VM_RELOAD_SHARED", "8")
    monkeypatch.setenv("NRI_CPUSET_VM_BENCH_ARGS", "--quick --spinners 2")
    monkeypatch.setenv("NRI_CPUSET_VM_TEST_LIMIT", "1200")
    monkeypatch.setenv("NRI_CPUSET_NOT_FOR_THE_GUEST", "x")
    vm.prepare(SHAPES["soak"], tmp_path / "r", python="/py", pytest_args=[])
    env = (tmp_path / "r" / "guest.env").read_text()
    assert "export NRI_CPUSET_VM_SOAK_MINUTES=10\n" in env
    assert "export NRI_CPUSET_VM_SOAK_SEED='7 8'\n" in env
    assert "export NRI_CPUSET_VM_RELOAD_SHARED=8\n" in env
    assert "export NRI_CPUSET_VM_BENCH_ARGS='--quick --spinners 2'\n" in env
    assert "export NRI_CPUSET_VM_TEST_LIMIT=1200\n" in env
    assert "NOT_FOR_THE_GUEST" not in env
    shell = subprocess.run(["bash", "-c", f"source {tmp_path / 'r' / 'guest.env'}; "
                            "bash -c 'echo $NRI_CPUSET_VM_SOAK_SEED'"],
                           capture_output=True, text=True, check=True)
    assert shell.stdout == "7 8\n"


@pytest.mark.parametrize(("outcome", "boots", "spent", "again"), [
    (Outcome.STALLED, 1, 400.0, True),
    (Outcome.NOT_BOOTED, 2, 900.0, True),
    (Outcome.STALLED, 3, 900.0, False),    # three boots at the most
    (Outcome.STALLED, 1, 1800.0, False),   # no boot past the budget, whatever the count
    (Outcome.FAILED, 1, 10.0, False),      # the tests' own failure
    (Outcome.TIMED_OUT, 1, 10.0, False),
    (Outcome.PASSED, 1, 10.0, False),
])
def test_only_emulations_failures_boot_a_shape_again_three_boots_within_half_an_hour(
        outcome: Outcome, boots: int, spent: float, again: bool) -> None:
    assert boot_again(outcome, boots, spent) is again

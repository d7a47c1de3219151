"""The VM lab's host side: boot one guest per machine shape and run ``tests/vm`` in it.

``python -m cpuset_lab.vm [SHAPE ...] [--all]`` (what ``scripts/vm-test`` runs after installing
QEMU, a Debian kernel, virtme-ng and containerd). Each guest is a stock Debian kernel under
QEMU's software emulation (``--disable-kvm``: the host's KVM is paravirtual and stock kernels
hang on it), booted by virtme-ng over a read-only view of this machine's own filesystem, so it
runs this checkout's virtual environment, containerd and runc without an image. The guest runs
``scripts/vm-guest``, which starts pytest on the shape's ``tests/vm`` modules; everything it
writes (JUnit report, logs, timings) lands in ``RESULTS/<shape>/``, shared read-write.

Exit code 0 only when every shape booted and all of its tests ran and passed; 1 otherwise
(the reason, per shape, is printed: guest did not boot, timed out, no results, tests failed);
2 for a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Final

from cpuset_lab.containerd_install import runtime_named
from cpuset_lab.daemonset.image_archive import archive_path, stale
from cpuset_lab.vm_heartbeat import HEARTBEAT_FILE, Heartbeat, stuck_in_kernel
from cpuset_lab.vm_output import Tail, copy_console, explain
from cpuset_lab.vm_results import (
    KERNEL_STUCK,
    ShapeResult,
    boot_again,
    judge,
    summary_table,
)
from cpuset_lab.vm_shapes import DEFAULT_SHAPE, SHAPES, Shape
from cpuset_lab.vm_systemd import SYSTEMD_ARGS, prepare_home

REPO: Final = Path(__file__).resolve().parents[2]
DEFAULT_RESULTS: Final = REPO / "build" / "vm-results"
BOOT_TIMEOUT: Final = 600.0
SHAPE_TIMEOUT: Final = 2400.0
TIME_SCALE: Final = 8
"""How much slower than the host the guest's timeouts assume (software emulation)."""
GUEST_TUNING: Final = ("NRI_CPUSET_VM_SOAK_", "NRI_CPUSET_VM_RELOAD_", "NRI_CPUSET_VM_BENCH_",
                       "NRI_CPUSET_VM_TEST_")
"""Prefixes of this machine's environment variables the guest's tests read (the soak's minutes
and seed, the systemd reload test's crowd, the isolation bench's size, the per-test hang
guard's limit): the guest inherits no environment, so ``guest.env`` exports them."""
#: Drivers udev would load for QEMU's q35 devices (SATA, CD-ROM, watchdogs, SMBus, speaker,
#: mouse), CPU-feature crypto, RAPL, EDAC and NVDIMM: none is used here, and loading them
#: (crypto self-tests above all) under emulation made booting take 40 s longer.
UNUSED_MODULES: Final = (
    "ahci", "libahci", "libata", "sr_mod", "cdrom", "sg", "i2c_i801", "i2c_smbus", "lpc_ich",
    "iTCO_wdt", "intel_pmc_bxt", "i6300esb", "pcspkr", "psmouse", "serio_raw", "evdev", "button",
    "joydev", "aesni_intel", "cryptd", "crypto_simd", "ghash_clmulni_intel", "sha1_ssse3",
    "sha256_ssse3", "sha512_ssse3", "sha512_generic", "crc32c_intel", "crc32_pclmul",
    "crct10dif_pclmul", "rapl", "intel_rapl_msr", "intel_rapl_common", "intel_cstate",
    "intel_uncore_frequency", "intel_uncore_frequency_common", "isst_if_mbox_msr",
    "isst_if_common", "skx_edac", "nfit", "kvm_intel", "kvm", "drm", "bochs")
#: Kernel arguments of every guest: no unused drivers, and a console log with warnings and
#: worse (virtme-ng's --verbose alone prints every message, which costs boot time).
KERNEL_ARGS: Final = (f"modprobe.blacklist={','.join(UNUSED_MODULES)}", "loglevel=5")



def find_kernel(boot: Path = Path("/boot")) -> Path:
    """The newest ``vmlinuz-*`` in ``boot`` (Debian's ``linux-image-amd64``); ``FileNotFoundError``
    when there is none."""
    def version_key(path: Path) -> list[int]:
        return [int(part) for part in re.findall(r"\d+", path.name)]

    kernels = sorted(boot.glob("vmlinuz-*"), key=version_key)
    if not kernels:
        raise FileNotFoundError(f"no vmlinuz-* in {boot}: apt-get install linux-image-amd64")
    return kernels[-1]


def prepare(shape: Shape, results: Path, *, python: str, pytest_args: list[str]) -> None:
    """A fresh ``results`` directory holding what the guest reads: ``shape.json`` (the facts
    the tests check), ``plugin.toml`` and ``guest.env`` (sourced by ``scripts/vm-guest``),
    which also names the containerd the guest runs (``NRI_CPUSET_RUNTIME`` here, 1.7 unset)
    and the drivers it loads; and the images QEMU backs the shape's NVMe drives with."""
    if results.exists():
        shutil.rmtree(results)
    results.mkdir(parents=True)
    for drive in shape.nvme:
        drive.make_image(results)
    (results / "shape.json").write_text(json.dumps(shape.facts(), indent=2) + "\n")
    (results / "plugin.toml").write_text(shape.plugin_config)
    values = {"REPO": str(REPO), "PYTHON": python, "SHAPE": shape.name,
              "CGROUP": str(shape.cgroup), "CGROUP_DRIVER": shape.cgroup_driver,
              "TIME_SCALE": str(TIME_SCALE), "RUNTIME": runtime_named().name,
              "TESTS": " ".join(shape.tests), "PYTEST_ARGS": shlex.join(pytest_args),
              "MODULES": "nvme" if shape.nvme else ""}
    passed_on = {key: value for key, value in sorted(os.environ.items())
                 if key.startswith(GUEST_TUNING)}
    (results / "guest.env").write_text(
        "".join(f"{key}={shlex.quote(value)}\n" for key, value in values.items())
        + "".join(f"export {key}={shlex.quote(value)}\n" for key, value in passed_on.items()))


def vng_command(shape: Shape, results: Path, *, vng: str, kernel: Path) -> list[str]:
    """The virtme-ng command line that boots ``shape`` and runs the guest script."""
    command = [vng, "--run", str(kernel), "--disable-kvm", "--disable-microvm", "--force-9p",
               "--verbose", "--name", f"vm-{shape.name}", "--cpus", str(shape.cpus),
               "--memory", f"{shape.memory_mib}M", "--rwdir", str(results),
               # "=": the value starts with a dash, which argparse would take for an option.
               f"--qemu-opts={shlex.join(shape.qemu_args(results))}"]
    boot_args: tuple[str, ...] = KERNEL_ARGS
    if shape.systemd:
        command.append("--systemd")
        boot_args += SYSTEMD_ARGS
    command += [f"--append={arg}" for arg in (*boot_args, *shape.kernel_args)]
    guest = f"bash {shlex.quote(str(REPO / 'scripts' / 'vm-guest'))} {shlex.quote(str(results))}"
    return [*command, "--exec", guest]


def run_shape(shape: Shape, results: Path, *, vng: str, kernel: Path, python: str,
              pytest_args: list[str], boot_timeout: float, timeout: float,
              echo: bool = True) -> ShapeResult:
    """Boot ``shape``, wait for its guest to finish (or a limit), and judge what it left."""
    prepare(shape, results, python=python, pytest_args=pytest_args)
    command = vng_command(shape, results, vng=vng, kernel=kernel)
    (results / "vng-command").write_text(shlex.join(command) + "\n")
    env = {**os.environ, "PATH": f"{Path(vng).parent}:{os.environ.get('PATH', '')}"}
    if shape.systemd:
        env["HOME"] = str(prepare_home(results))
    tail = Tail(results / "guest.log", shape.name, sys.stdout)
    if echo:
        tail.start()
    started = time.monotonic()
    timed_out = False
    stalled = ""
    with (results / "console.log").open("wb") as console:
        # A pipe, not the file: QEMU opens its stdout twice, and two descriptors on one file
        # would overwrite each other's output.
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,  # noqa: S603
                                stderr=subprocess.STDOUT, cwd=REPO, env=env,
                                start_new_session=True)
        kernel_stuck = threading.Event()
        copier = threading.Thread(target=copy_console, args=(proc, console, kernel_stuck),
                                  daemon=True)
        copier.start()
        heartbeat = Heartbeat(results / HEARTBEAT_FILE)
        while proc.poll() is None:
            now = time.monotonic()
            elapsed = now - started
            booted = (results / "timings").exists()
            heartbeat.look(now)
            stalled = (KERNEL_STUCK if kernel_stuck.is_set()
                       else heartbeat.silence(now) or stuck_in_kernel(results))
            if elapsed > timeout or (not booted and elapsed > boot_timeout):
                timed_out = True
                _kill_group(proc)
                break
            if stalled:
                _kill_group(proc)
                break
            time.sleep(1.0)
        proc.wait()
        copier.join(timeout=10)
    (results / "vng.rc").write_text(f"{proc.returncode}\n")
    wall = time.monotonic() - started
    tail.done.set()
    if echo:
        tail.join(timeout=10)
    return judge(shape.name, results, wall_s=wall, timed_out=timed_out, stalled=stalled)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def ensure_image() -> None:
    """Build the plugin's image (``scripts/build-image``) unless its archive is there and
    newer than its sources: a shape's guest runs the DaemonSet's pod from it and cannot build
    anything itself."""
    archive = archive_path(REPO)
    why = stale(archive, REPO)
    if not why:
        return
    print(f"== VM lab: {archive.name} is {why}: bash scripts/build-image", flush=True)
    subprocess.run(["bash", str(REPO / "scripts/build-image")], check=True, cwd=REPO)  # noqa: S603,S607


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m cpuset_lab.vm",
        description="Boot VM lab guests (one per machine shape) and run tests/vm in each.")
    parser.add_argument("shapes", nargs="*", metavar="SHAPE",
                        help=f"shapes to run (default: {DEFAULT_SHAPE}); --list names them")
    parser.add_argument("--all", action="store_true", help="every shape, one after another")
    parser.add_argument("--list", action="store_true", help="list the shapes and exit")
    # Absolute: the guest reads these paths from its own working directory (a relative
    # one left a systemd guest without its fstab, and init died).
    parser.add_argument("--results", type=lambda value: Path(value).resolve(),
                        default=DEFAULT_RESULTS,
                        help="where each shape's results directory goes (default: %(default)s)")
    parser.add_argument("--kernel", type=Path,
                        help="kernel image (default: the newest /boot/vmlinuz-*)")
    parser.add_argument("--vng", default=str(Path(sys.executable).parent / "vng"),
                        help="the virtme-ng command (default: %(default)s)")
    parser.add_argument("--boot-timeout", type=float, default=BOOT_TIMEOUT)
    parser.add_argument("--timeout", type=float, default=SHAPE_TIMEOUT,
                        help="seconds one guest may run in all (default: %(default)s)")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression (development)")
    return parser


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        for shape in SHAPES.values():
            print(f"{shape.name:<12} {'(CI) ' if shape.in_ci else ''}{shape.summary}")
        return 0
    names = list(SHAPES) if args.all else (args.shapes or [DEFAULT_SHAPE])
    unknown = [name for name in names if name not in SHAPES]
    if unknown:
        parser.error(f"unknown shape(s) {', '.join(unknown)}; known: {', '.join(SHAPES)}")
    if not shutil.which(args.vng):
        parser.error(f"virtme-ng not found at {args.vng} (pip install virtme-ng)")
    try:
        kernel = args.kernel or find_kernel()
    except FileNotFoundError as exc:
        parser.error(str(exc))
    pytest_args = ["-k", args.keyword] if args.keyword else []
    if any(SHAPES[name].runs_image for name in names):
        ensure_image()
    outcomes: list[ShapeResult] = []
    for name in names:
        shape = SHAPES[name]
        results = args.results / name
        print(f"== VM lab: {name}: {shape.summary} (kernel {kernel.name}, containerd "
              f"{runtime_named().name}, results in {results})", flush=True)
        boots, started = 1, time.monotonic()
        result = run_shape(shape, results, vng=args.vng, kernel=kernel, python=sys.executable,
                           pytest_args=pytest_args, boot_timeout=args.boot_timeout,
                           timeout=args.timeout)
        while boot_again(result.outcome, boots, time.monotonic() - started):
            # QEMU's software emulation has been seen to crash (segfault) while the guest
            # kernel brings its CPUs up, to livelock it (vm_output.STALL_LIMIT) and to stop
            # it advancing (vm_heartbeat): another boot before calling it a failure; the
            # summary says which run counted.
            print(explain(result, results) + f"\n== VM lab: {name}: booting once more",
                  flush=True)
            # The next boot starts from a fresh results directory: keep this console beside it.
            with contextlib.suppress(OSError):
                shutil.copyfile(results / "console.log",
                                args.results / f"{name}.boot-{boots}-console.log")
            result = run_shape(shape, results, vng=args.vng, kernel=kernel,
                               python=sys.executable, pytest_args=pytest_args,
                               boot_timeout=args.boot_timeout, timeout=args.timeout)
            boots += 1
        outcomes.append(result)
        if not result.ok:
            print(explain(result, results), flush=True)
    print("== VM lab summary\n" + summary_table(outcomes), flush=True)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "summary.txt").write_text(summary_table(outcomes) + "\n")
    return 0 if outcomes and all(r.ok for r in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

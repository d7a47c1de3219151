"""The probe (``bench/probes/dutycycle.c``): built static at bench time, its command lines, and
its one JSON line of output parsed into values (``ProbeOutputError`` when it is not what the
probe prints)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).resolve().parents[1] / "probes" / "dutycycle.c"
BINARY = "dutycycle"
MOUNT_POINT = "/probe"
"""Where the build directory is bind-mounted, read-only, in the probe's container."""


class ProbeOutputError(ValueError):
    """The probe's output is not the JSON line it prints (it failed, or was cut short)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """Work loops one millisecond holds on an idle CPU (the fastest of many trials)."""

    loops_per_ms: int

    def loops(self, microseconds: int) -> int:
        """Loops that take ``microseconds`` on an idle CPU (at least one)."""
        return max(1, self.loops_per_ms * microseconds // 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """What one probe run does: the duty cycle (periods, period, work) and the job."""

    periods: int
    period_us: int
    work_us: int
    job_ms: int

    def command(self, calibration: Calibration) -> list[str]:
        """The probe's command line in its container, the same work in every case."""
        return [f"{MOUNT_POINT}/{BINARY}", "run", str(self.periods), str(self.period_us),
                str(calibration.loops(self.work_us)), str(self.work_us),
                str(calibration.loops(self.job_ms * 1000))]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeRun:
    """What one run measured: each period's lateness (ns), the job's time (ns), deadlines
    skipped because work ended past them, involuntary context switches in each part, and the
    CPUs the probe was allowed."""

    late_ns: tuple[int, ...]
    job_ns: int
    skipped: int
    duty_switches: int
    job_switches: int
    cpus: tuple[int, ...]


CALIBRATE_COMMAND = [f"{MOUNT_POINT}/{BINARY}", "calibrate"]


def _json_line(lines: Sequence[str], mode: str) -> dict[str, Any]:
    """The last line that is a JSON object of ``mode``."""
    for line in reversed(lines):
        if not line.lstrip().startswith("{"):
            continue
        try:
            found = json.loads(line)
        except json.JSONDecodeError as error:
            raise ProbeOutputError(f"the probe's {mode} line is not JSON: {error}") from None
        if isinstance(found, dict) and found.get("mode") == mode:
            return found
    tail = "\n".join(lines[-5:])
    raise ProbeOutputError(f"no {mode} line in the probe's output; its last lines:\n{tail}")


def _int(found: dict[str, Any], key: str) -> int:
    value = found.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProbeOutputError(f"the probe's {key!r} is {value!r}, not an integer")
    return value


def _ints(found: dict[str, Any], key: str) -> tuple[int, ...]:
    values = found.get(key)
    if not isinstance(values, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ProbeOutputError(f"the probe's {key!r} is not a list of integers")
    return tuple(values)


def parse_calibration(lines: Sequence[str]) -> Calibration:
    """The calibration in the probe's output lines."""
    loops = _int(_json_line(lines, "calibrate"), "loops_per_ms")
    if loops <= 0:
        raise ProbeOutputError(f"the probe calibrated {loops} loops per ms")
    return Calibration(loops_per_ms=loops)


def parse_run(lines: Sequence[str]) -> ProbeRun:
    """The run in the probe's output lines; every period it was asked for must be there."""
    found = _json_line(lines, "run")
    late = _ints(found, "late_ns")
    if not late or len(late) != _int(found, "periods"):
        raise ProbeOutputError(f"the probe reported {len(late)} periods of "
                               f"{found.get('periods')!r}")
    return ProbeRun(late_ns=late, job_ns=_int(found, "job_ns"), skipped=_int(found, "skipped"),
                    duty_switches=_int(found, "duty_switches"),
                    job_switches=_int(found, "job_switches"), cpus=_ints(found, "cpus"))


def have_static_gcc() -> bool:
    """Whether gcc is here and can link a static C program."""
    if shutil.which("gcc") is None:
        return False
    # Without libc6-dev gcc answers the bare name: it found no static C library.
    found = subprocess.run(["gcc", "-print-file-name=libc.a"], capture_output=True,  # noqa: S607
                           text=True, check=False).stdout.strip()
    return os.path.isabs(found)


def build(build_dir: Path) -> Path:
    """The probe compiled static into ``build_dir`` (gcc and libc6-dev installed with apt-get
    first when missing, as the scripts install python3-venv); returns the binary's path."""
    if not have_static_gcc():
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)  # noqa: S607
        subprocess.run(["apt-get", "install", "-y", "-qq", "gcc", "libc6-dev"],  # noqa: S607
                       check=True, env=env, stdout=subprocess.DEVNULL)
    build_dir.mkdir(parents=True, exist_ok=True)
    binary = build_dir / BINARY
    subprocess.run(["gcc", "-O2", "-static", "-Wall", "-Wextra",  # noqa: S603, S607 - our source
                    "-o", str(binary), str(SOURCE)], check=True)
    return binary

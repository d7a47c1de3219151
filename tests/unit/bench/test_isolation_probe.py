"""The isolation bench's probe: its output parsed (and refused when it is not the probe's
line), its command lines, and the C source compiled and run natively where gcc can link it
static."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from isolation_bench import probe
from isolation_bench.probe import (
    Calibration,
    ProbeOutputError,
    Workload,
    parse_calibration,
    parse_run,
)

RUN = {"mode": "run", "periods": 3, "period_us": 1000, "work_loops": 10, "work_us": 500,
       "job_loops": 99, "job_ns": 4_000_000, "skipped": 1, "duty_switches": 2,
       "job_switches": 5, "sink": 1, "cpus": [1], "late_ns": [900, -20, 150_000]}


def test_a_run_line_becomes_its_values() -> None:
    run = parse_run(["starting", json.dumps(RUN)])
    assert run.late_ns == (900, -20, 150_000)
    assert (run.job_ns, run.skipped, run.duty_switches, run.job_switches, run.cpus) == (
        4_000_000, 1, 2, 5, (1,))


def test_the_last_line_of_the_mode_asked_for_is_read() -> None:
    calibrate = {"mode": "calibrate", "loops_per_ms": 7, "cpus": [0]}
    lines = [json.dumps(calibrate), json.dumps(RUN), json.dumps({**calibrate, "loops_per_ms": 9})]
    assert parse_calibration(lines).loops_per_ms == 9
    assert parse_run(lines).cpus == (1,)


@pytest.mark.parametrize(("lines", "message"), [
    ([], "no run line"),
    (["dutycycle: no memory for 3 periods"], "no run line"),
    (['{"mode": "run", "late_ns": [1, 2'], "not JSON"),
    ([json.dumps({**RUN, "late_ns": [1, 2]})], "2 periods of 3"),
    ([json.dumps({**RUN, "periods": 0, "late_ns": []})], "0 periods"),
    ([json.dumps({**RUN, "late_ns": [1, 2.5, 3]})], "not a list of integers"),
    ([json.dumps({**RUN, "job_ns": "4"})], "'job_ns' is '4'"),
    ([json.dumps({**RUN, "skipped": True})], "'skipped' is True"),
    ([json.dumps({k: v for k, v in RUN.items() if k != "cpus"})], "'cpus' is not"),
])
def test_output_that_is_not_a_whole_run_is_refused(lines: list[str], message: str) -> None:
    with pytest.raises(ProbeOutputError, match=message):
        parse_run(lines)


@pytest.mark.parametrize("loops", [0, -3])
def test_a_calibration_of_no_loops_is_refused(loops: int) -> None:
    with pytest.raises(ProbeOutputError, match="calibrated"):
        parse_calibration([json.dumps({"mode": "calibrate", "loops_per_ms": loops})])


def test_the_command_does_the_same_calibrated_work_in_every_case() -> None:
    work = Workload(periods=2000, period_us=1000, work_us=500, job_ms=300)
    assert work.command(Calibration(loops_per_ms=900_000)) == [
        "/probe/dutycycle", "run", "2000", "1000", "450000", "500", "270000000"]


def test_work_is_at_least_one_loop() -> None:
    assert Calibration(loops_per_ms=1).loops(10) == 1


needs_gcc = pytest.mark.skipif(not probe.have_static_gcc(),
                               reason="no gcc with a static libc (Debian: gcc, libc6-dev)")


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The probe compiled once for this module's tests."""
    return probe.build(tmp_path_factory.mktemp("probe"))


@needs_gcc
def test_the_probe_compiles_and_its_output_parses(binary: Path) -> None:
    calibrated = subprocess.run([binary, "calibrate"], capture_output=True, text=True,
                                check=True)
    calibration = parse_calibration(calibrated.stdout.splitlines())
    work = Workload(periods=20, period_us=1000, work_us=100, job_ms=5)
    command = [str(binary), *work.command(calibration)[1:]]
    ran = subprocess.run(command, capture_output=True, text=True, check=True)
    run = parse_run(ran.stdout.splitlines())
    assert len(run.late_ns) == 20
    assert run.job_ns > 0
    assert run.cpus  # the CPUs this test may run on


@needs_gcc
@pytest.mark.parametrize("args", [[], ["run", "1"], ["run", "0", "1000", "1", "1", "1"],
                                  ["run", "10", "x", "1", "1", "1"], ["spin"]])
def test_the_probe_refuses_bad_arguments_with_exit_code_2(binary: Path,
                                                           args: list[str]) -> None:
    ran = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
    assert ran.returncode == 2
    assert ran.stdout == ""
    assert "dutycycle" in ran.stderr


def test_without_a_static_gcc_the_build_installs_gcc_and_libc6_dev_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(probe, "have_static_gcc", lambda: False)
    monkeypatch.setattr(probe.subprocess, "run", run)
    binary = probe.build(tmp_path / "build")
    assert calls[0] == ["apt-get", "update", "-qq"]
    assert calls[1] == ["apt-get", "install", "-y", "-qq", "gcc", "libc6-dev"]
    assert calls[2][:3] == ["gcc", "-O2", "-static"]
    assert calls[2][-3:] == ["-o", str(binary), str(probe.SOURCE)]


def test_with_a_static_gcc_nothing_is_installed(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(probe, "have_static_gcc", lambda: True)
    monkeypatch.setattr(probe.subprocess, "run",
                        lambda command, **_: calls.append(command))
    probe.build(tmp_path)
    assert [command[0] for command in calls] == ["gcc"]

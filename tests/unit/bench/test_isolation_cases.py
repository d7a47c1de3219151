"""The isolation bench's cases, neighbours and sizes."""

from __future__ import annotations

import pytest
from isolation_bench.cases import (
    CASES,
    DISK_IO,
    FLOOR,
    FULL,
    IO_MOUNT,
    NO_PLUGIN,
    PLUGIN_DEFAULTS,
    QUICK,
    QUIET_CPUS,
    QUIET_FREQ,
    QUIET_IDLE,
    QUIET_IRQS,
    Case,
    cases,
    check_cases,
    neighbours,
)

from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import container_resources


def test_one_run_measures_the_floor_no_plugin_the_defaults_then_each_quiet_request() -> None:
    assert CASES == (FLOOR, NO_PLUGIN, PLUGIN_DEFAULTS, QUIET_IRQS, QUIET_IDLE, QUIET_CPUS)
    check_cases(CASES)
    assert (FLOOR.neighbours, FLOOR.plugin) == (False, False)
    assert (NO_PLUGIN.neighbours, NO_PLUGIN.plugin) == (True, False)
    assert (PLUGIN_DEFAULTS.neighbours, PLUGIN_DEFAULTS.plugin) == (True, True)
    assert PLUGIN_DEFAULTS.plugin_config == ""
    assert not PLUGIN_DEFAULTS.annotations


def test_each_isolation_request_is_the_plugins_defaults_with_crios_annotation() -> None:
    assert dict(QUIET_IRQS.annotations) == {"irq-load-balancing.crio.io": "disable"}
    assert dict(QUIET_IDLE.annotations) == {"cpu-c-states.crio.io": "disable"}
    assert dict(QUIET_CPUS.annotations) == {**QUIET_IRQS.annotations, **QUIET_IDLE.annotations}
    assert dict(QUIET_FREQ.annotations) == {"cpu-freq-governor.crio.io": "performance"}
    for case in (QUIET_IRQS, QUIET_IDLE, QUIET_CPUS, QUIET_FREQ):
        assert (case.neighbours, case.plugin, case.plugin_config) == (True, True, "")


def test_the_governor_is_measured_only_where_cpufreq_offers_it() -> None:
    assert cases(["powersave", "performance"]) == ((*CASES, QUIET_FREQ), [])
    measured, skipped = cases([])
    assert measured == CASES
    assert len(skipped) == 1
    assert "governor" in skipped[0]
    assert "no cpufreq" in skipped[0]
    measured, skipped = cases(["schedutil"])
    assert measured == CASES
    assert "not among its governors (schedutil)" in skipped[0]
    for found, _ in (cases([]), cases(["performance"])):
        check_cases(found)


@pytest.mark.parametrize(("cases", "message"), [
    ((), "floor"),
    ((NO_PLUGIN, FLOOR), "floor"),
    ((PLUGIN_DEFAULTS,), "floor"),
    ((FLOOR, NO_PLUGIN, NO_PLUGIN), "repeat"),
    ((FLOOR, Case(name="x", what="", neighbours=True, plugin=False,
                  annotations={"a": "b"})), "no plugin"),
    ((FLOOR, Case(name="x", what="", neighbours=True, plugin=False,
                  plugin_config="[cpus]\n")), "no plugin"),
])
def test_case_lists_that_cannot_be_read_against_a_floor_are_refused(
        cases: tuple[Case, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_cases(cases)


def test_spinners_alternate_besteffort_and_one_cpu_burstable_then_one_disk_writer() -> None:
    found = neighbours(4)
    assert [n.qos for n in found] == [QosClass.BEST_EFFORT, QosClass.BURSTABLE,
                                      QosClass.BEST_EFFORT, QosClass.BURSTABLE,
                                      QosClass.BURSTABLE]
    assert [n.io for n in found] == [False] * 4 + [True]
    assert found[-1].command == DISK_IO
    assert f"of={IO_MOUNT}/" in DISK_IO[-1]
    assert "oflag=direct" in DISK_IO[-1]
    weighted = container_resources(cpu_request=found[1].cpu_request)
    assert (weighted.cpu_shares, weighted.cpu_quota) == (1024, 0)  # weighted, never throttled
    besteffort = container_resources(cpu_request=found[0].cpu_request or None)
    assert (besteffort.cpu_shares, besteffort.cpu_quota) == (2, 0)


def test_no_spinners_leave_the_disk_writer() -> None:
    assert [n.name for n in neighbours(0)] == ["disk-io"]


def test_the_full_run_has_ten_thousand_periods_or_more_and_the_quick_one_fewer() -> None:
    assert FULL.workload.periods >= 10_000
    assert QUICK.workload.periods < FULL.workload.periods
    assert QUICK.workload.job_ms < FULL.workload.job_ms
    for sizes in (FULL, QUICK):
        assert sizes.workload.work_us < sizes.workload.period_us

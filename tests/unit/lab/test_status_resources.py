"""The lab kubelet's rule for ``status.resources.limits.cpu`` (the real kubelet's
``toKubeContainerResources`` and ``determineResource``): the runtime's quota when it reports
one, the previous status's value while the same container runs without one, the spec's
otherwise."""

from __future__ import annotations

import pytest

from cpuset_adapters.cri.results import Resources
from cpuset_lab.status_resources import (
    ReportedCpu,
    quantity,
    reported_cpu_limit,
    runtime_cpu_limit,
)

TWO = Resources(cpu_period=100_000, cpu_quota=200_000, cpu_shares=2048)
LIFTED = Resources(cpu_period=100_000, cpu_quota=-1, cpu_shares=2048)


@pytest.mark.parametrize(("resources", "millis"), [
    (TWO, 2000), (Resources(cpu_period=100_000, cpu_quota=150_000), 1500),
    (LIFTED, None), (Resources(cpu_period=100_000, cpu_quota=0), None),
    (Resources(cpu_period=0, cpu_quota=200_000), None), (None, None),
    (Resources(cpu_period=100_000, cpu_quota=50), None)])  # below a millicore: 0, none
def test_the_runtimes_limit_is_its_quota_over_its_period_and_none_without_one(
        resources: Resources | None, millis: int | None) -> None:
    assert runtime_cpu_limit(resources) == millis


def test_a_reported_quota_wins_over_the_previous_status_and_the_spec() -> None:
    previous = ReportedCpu("c1", 1000, running=True)
    assert reported_cpu_limit("c1", TWO, spec_millis=3000, previous=previous).limit_millis == 2000


def test_without_a_quota_a_running_container_keeps_its_previous_limit() -> None:
    # Issue 44: grown from 1 to 2 CPUs, the quota lifted in the record: the status says 1.
    previous = ReportedCpu("c1", 1000, running=True)
    now = reported_cpu_limit("c1", LIFTED, spec_millis=2000, previous=previous)
    assert now == ReportedCpu("c1", 1000, running=True)
    assert quantity(now.limit_millis) == "1"


def test_without_a_quota_a_container_that_just_started_or_replaced_another_gets_the_spec() -> None:
    creating = ReportedCpu("c1", None, running=False)
    assert reported_cpu_limit("c1", LIFTED, spec_millis=2000,
                              previous=creating).limit_millis == 2000
    other = ReportedCpu("c0", 1000, running=True)
    assert reported_cpu_limit("c1", LIFTED, spec_millis=2000, previous=other).limit_millis == 2000


def test_without_a_quota_or_a_previous_status_there_is_no_limit() -> None:
    assert reported_cpu_limit("c1", LIFTED, spec_millis=2000, previous=None).limit_millis is None


@pytest.mark.parametrize(("millis", "text"), [(2000, "2"), (1500, "1500m"), (None, None)])
def test_limits_print_as_the_api_server_prints_cpu_quantities(millis: int | None,
                                                              text: str | None) -> None:
    assert quantity(millis) == text

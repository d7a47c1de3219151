"""Model-based test: random lifecycles against the engine, the fake runtime and injected
failures (the model and its checks: :mod:`tests.unit.core.engine_lifecycle_model`)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from cpuset_core import CpusetEngine
from cpuset_lab.machines import build_topology
from tests.unit.core.engine_lifecycle_model import SHAPES, EngineLifecycle

TestEngineLifecycle = EngineLifecycle.TestCase
# CPUSET_STATEFUL_EXAMPLES=2000 for a deep local run; the default keeps CI fast.
TestEngineLifecycle.settings = settings(
    max_examples=int(os.environ.get("CPUSET_STATEFUL_EXAMPLES", "300")), stateful_step_count=40,
    deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("shape", SHAPES)
def test_every_shape_builds_an_engine(shape: object) -> None:
    assert CpusetEngine(build_topology(shape)).shared_pool()  # type: ignore[arg-type]

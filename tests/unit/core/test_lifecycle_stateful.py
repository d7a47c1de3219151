"""Model-based test of container lifecycles within pods (the model and its checks:
:mod:`tests.unit.core.lifecycle_model`)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.unit.core.lifecycle_model import Lifecycle

TestLifecycle = Lifecycle.TestCase
# CPUSET_STATEFUL_EXAMPLES=2000 for a deep local run; the default keeps CI fast.
TestLifecycle.settings = settings(
    max_examples=int(os.environ.get("CPUSET_STATEFUL_EXAMPLES", "200")), stateful_step_count=40,
    deadline=None, suppress_health_check=[HealthCheck.too_slow])

"""What every test shares: hypothesis's profile.

Hypothesis fails an example that takes longer than 200 ms (its default deadline) and a
strategy that draws slowly (the ``too_slow`` health check): both judge speed, which a loaded
2-CPU CI machine beside VM guests does not have. Here neither applies unless a test asks;
speed belongs in the benchmarks (decision 52). An explicit ``@settings`` keeps these defaults
for whatever it does not name."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("nri-cpuset", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nri-cpuset")

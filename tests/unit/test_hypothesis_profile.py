"""Property tests judge no speed: hypothesis's profile (tests/conftest.py) has no deadline
and no too_slow health check, also under a test's own ``@settings``."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def test_hypothesis_sets_no_deadline_and_no_too_slow_check_by_default() -> None:
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


def test_a_tests_own_settings_keep_the_profiles_defaults_for_what_they_do_not_name() -> None:
    own = settings(max_examples=5)
    assert own.deadline is None
    assert HealthCheck.too_slow in own.suppress_health_check

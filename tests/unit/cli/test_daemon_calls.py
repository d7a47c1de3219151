"""When the daemon calls UpdateContainers itself, the one rule every path of its own asks
(the pusher, a hotplug's moves, the CRI inventory's corrections): a pre-installed plugin on a
runtime whose locks can deadlock never does, its updates ride on answers; an external one there
waits for a quiet spell; on NRI v0.12.1 or later any time (decision 51)."""

from __future__ import annotations

import pytest

from cpuset_adapters.nri.handler_port import Event, RuntimeInfo
from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap
from cpuset_cli.daemon.plugin import QUIET, Daemon
from cpuset_service.record_pace import RECORD_QUIET
from tests.builders.nri import container, pod
from tests.unit.core.topologies import OFFLINE_ISO


def daemon(*, pre_installed: bool, nri_version: str, quiet_for: float) -> Daemon:
    environ = {"NRI_PLUGIN_SOCKET": "3"} if pre_installed else {}
    built = bootstrap.build_daemon(StaticTopologySource(OFFLINE_ISO), environ=environ,
                                   name="nri-cpuset", index="99", socket_path="/nonexistent",
                                   hotplug_interval=0, verify_period=0, kernel_updates=False)
    built.handler.on_configure(RuntimeInfo(nri_version=nri_version,
                                           registration_timeout_ms=5000))
    built.session.quiet_for = lambda: quiet_for  # type: ignore[method-assign]
    return built


@pytest.mark.parametrize(("pre_installed", "nri_version", "quiet_for", "answers_only",
                          "may_call"), [
    (True, "", QUIET, True, False),              # pre-installed on containerd 1.7 / 2.1
    (True, "v0.12.0", 3600.0, True, False),      # however quiet the runtime
    (False, "", QUIET, False, True),             # external there: after a quiet spell
    (False, "", QUIET / 2, False, False),        # not before
    (True, "v0.12.1", 0.0, False, True),         # locks that cannot deadlock: any time
    (False, "v0.12.1", 0.0, False, True),
])
def test_the_plugin_calls_update_containers_itself_only_where_it_cannot_deadlock_the_runtime(
        pre_installed: bool, nri_version: str, quiet_for: float, answers_only: bool,
        may_call: bool) -> None:
    built = daemon(pre_installed=pre_installed, nri_version=nri_version, quiet_for=quiet_for)
    assert built._answers_only() is answers_only
    assert built._may_call() is may_call


def test_the_daemon_paces_records_by_the_starts_it_waits_for_and_the_runtime_s_quiet() -> None:
    """Issue 45: wired to the service's start tracker and the session's quiet spell."""
    quiet = [3600.0]
    built = daemon(pre_installed=False, nri_version="v0.12.2", quiet_for=0.0)
    built.session.quiet_for = lambda: quiet[0]  # type: ignore[method-assign]
    pace = built.service.pusher.pace
    assert pace.may_send()
    web = pod("web", qos="guaranteed")
    app = container("app", web, cpus=1)
    built.handler.on_create_container(web, app)
    assert pace.holding()  # created, not started
    built.handler.on_start_container(web, app)
    assert pace.holding()  # its task starts: PostStartContainer says when that is done
    built.handler.on_post_start_container(web, app)
    quiet[0] = RECORD_QUIET / 2
    assert not pace.holding()
    assert not pace.may_send()
    quiet[0] = RECORD_QUIET
    assert pace.may_send()


def test_on_an_older_runtime_a_start_does_not_wait_for_a_post_start_it_never_gets() -> None:
    built = daemon(pre_installed=False, nri_version="", quiet_for=3600.0)
    assert Event.POST_START_CONTAINER not in built.handler.subscribed_events()
    web = pod("web", qos="guaranteed")
    app = container("app", web, cpus=1)
    built.handler.on_create_container(web, app)
    built.handler.on_start_container(web, app)
    assert not built.service.pusher.pace.holding()

"""Reloading the running configuration: validate, then swap. Live keys reach the engine at
once; keys that need a restart are reported and keep their running values; an invalid file
keeps the last good configuration and the log says why."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from cpuset_adapters.config import ConfigError, to_settings
from cpuset_cli.daemon.live_config import LiveConfig
from cpuset_core import CPUSet, CpusetEngine, Spanning
from cpuset_core.quota import ExclusiveQuota
from cpuset_service.placement import PlacementService
from tests.unit.core.topologies import OFFLINE_ISO

ALLOW_STORAGE = '[pinning]\nnamespaces = ["storage"]\n'


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "config.toml"
    file.write_text(ALLOW_STORAGE)
    return file


def live(path: Path, overrides: dict[str, dict[str, object]] | None = None) -> LiveConfig:
    config = LiveConfig.load(path, required=True, topology=OFFLINE_ISO, overrides=overrides)
    service = PlacementService(CpusetEngine(OFFLINE_ISO, to_settings(config.current)))
    service.synchronize([], [], source="synchronize")  # running: restart-only keys stay
    config.attach(service)
    return config


def rewrite(path: Path, text: str) -> None:
    path.write_text(text)
    # Make the change visible to the stamp even on coarse mtime clocks.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def engine(config: LiveConfig) -> CpusetEngine:
    assert isinstance(config.decisions, PlacementService)
    return config.decisions.engine


def test_a_valid_reload_applies_live_keys_to_the_engine(path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    config = live(path)
    assert not engine(config).settings.may_pin("team-a")
    rewrite(path, '[pinning]\nnamespaces = ["storage", "team-*"]\n'
                  '[cpus]\nnuma_spanning = "spread"\n')
    assert config.reload_file("SIGHUP") is True
    assert engine(config).settings.may_pin("team-a")
    assert engine(config).settings.allocation.numa_spanning is Spanning.SPREAD
    assert config.current.pinning.namespaces == ("storage", "team-*")
    assert 'SIGHUP: applied pinning.namespaces = ["storage", "team-*"], cpus.numa_spanning = ' \
           '"spread"' in caplog.text


def test_an_invalid_file_keeps_the_last_good_configuration_and_says_why(
        path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = live(path)
    before = config.current
    rewrite(path, '[pinning]\nnamespaces = ["*"]\n[cpus]\nreserved = "0-x"\n')
    assert config.reload_file("SIGHUP") is False
    assert config.current == before
    assert not engine(config).settings.may_pin("default")
    assert (f'SIGHUP: rejected {path}, keeping the last good configuration: '
            f'cpus.reserved = "0-x": invalid CPU list') in caplog.text


def test_a_toml_syntax_error_at_reload_keeps_the_last_good_configuration(
        path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = live(path)
    rewrite(path, "[pinning\n")
    assert config.reload_file("SIGHUP") is False
    assert config.current.pinning.namespaces == ("storage",)
    assert "TOML syntax error" in caplog.text
    assert "line 1" in caplog.text


def test_a_file_removed_at_reload_keeps_the_last_good_configuration(
        path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = live(path)
    path.unlink()
    assert config.reload_file("SIGHUP") is False
    assert config.current.pinning.namespaces == ("storage",)
    assert "the file does not exist" in caplog.text


def test_keys_that_need_a_restart_are_reported_and_keep_their_running_values(
        path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = live(path)
    rewrite(path, '[pinning]\nnamespaces = ["*"]\nannotation = "example.com/cpus"\n'
                  '[cpus]\nreserved = "0"\n')
    assert config.reload_file("SIGHUP") is True
    assert config.current.pinning.namespaces == ("*",)  # live: applied
    assert engine(config).settings.may_pin("default")
    assert config.current.cpus.reserved == ""  # restart: kept
    assert engine(config).settings.system_reserved == CPUSet()
    assert config.current.pinning.annotation == "weka.io/cores-ids"
    assert ('SIGHUP: pinning.annotation ("weka.io/cores-ids" -> "example.com/cpus"), '
            'cpus.reserved ("" -> "0") changed but need a restart; running with the old '
            "values") in caplog.text


def test_a_reload_with_nothing_changed_says_so(path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    config = live(path)
    assert config.reload_file("SIGHUP") is True
    assert "SIGHUP: configuration unchanged" in caplog.text


def test_the_log_level_changes_live(path: Path) -> None:
    root = logging.getLogger()
    saved = root.level
    try:
        root.setLevel(logging.INFO)
        config = live(path)
        rewrite(path, ALLOW_STORAGE + '[observability]\nlog_level = "error"\n')
        assert config.reload_file("SIGHUP") is True
        assert root.level == logging.ERROR
    finally:
        root.setLevel(saved)


def test_the_exclusive_cpu_quota_is_set_at_attach_and_changes_live(path: Path) -> None:
    rewrite(path, ALLOW_STORAGE + '[cpus]\nexclusive_cpu_quota = "kubelet"\n')
    config = live(path)
    assert isinstance(config.decisions, PlacementService)
    assert config.decisions.exclusive_quota is ExclusiveQuota.KUBELET
    rewrite(path, ALLOW_STORAGE)
    assert config.reload_file("SIGHUP") is True
    assert config.decisions.exclusive_quota is ExclusiveQuota.UNLIMITED


def test_the_file_watcher_reloads_only_when_the_file_changed(path: Path) -> None:
    config = live(path)
    assert config.check_file() is None
    rewrite(path, '[pinning]\nnamespaces = ["team-*"]\n')
    assert config.check_file() is True
    assert engine(config).settings.may_pin("team-b")
    assert config.check_file() is None


def test_explicit_flags_win_over_the_file_at_start_and_at_every_reload(path: Path) -> None:
    path.write_text('[runtime]\nstatus_socket = "/run/a.sock"\n[observability]\n'
                    'log_level = "debug"\n')
    config = live(path, {"runtime": {"status_socket": "/run/flag.sock"}})
    assert config.current.runtime.status_socket == "/run/flag.sock"
    assert config.current.observability.log_level == "debug"
    rewrite(path, '[runtime]\nstatus_socket = "/run/b.sock"\n')
    assert config.reload_file("SIGHUP") is True
    assert config.current.runtime.status_socket == "/run/flag.sock"


def test_an_invalid_flag_value_is_named_like_a_file_key(path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        live(path, {"runtime": {"nri_socket": "relative.sock"}})
    assert caught.value.source == "command-line flags"  # not the file: it is fine
    assert 'runtime.nri_socket = "relative.sock": must be an absolute path' in str(caught.value)


def test_the_runtimes_plugin_config_wins_over_the_file_and_survives_file_reloads(
        path: Path) -> None:
    config = live(path)
    assert config.apply_runtime_config('[pinning]\nnamespaces = ["team-*"]\n') is True
    assert engine(config).settings.may_pin("team-a")
    assert not engine(config).settings.may_pin("storage")
    rewrite(path, '[pinning]\nnamespaces = ["storage"]\n[cpus]\nmin_shared_pool = 1\n')
    assert config.reload_file("SIGHUP") is True
    assert config.current.pinning.namespaces == ("team-*",)
    assert config.current.cpus.min_shared_pool == 1


def test_an_invalid_runtime_plugin_config_is_logged_and_changes_nothing(
        path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = live(path)
    assert config.apply_runtime_config("[pinning]\nnamespace = []\n") is False
    assert config.current.pinning.namespaces == ("storage",)
    assert f"configure: rejected {path}, keeping the last good configuration" not in \
        caplog.text  # the drop-in is at fault, not the file
    assert "configure: rejected the runtime's plugin config, keeping" in caplog.text
    assert "pinning.namespace: unknown key (did you mean namespaces?" in caplog.text
    assert config.apply_runtime_config("[[") is False
    assert "the runtime's plugin config" in caplog.text


def test_a_missing_default_file_means_the_defaults_and_is_said_at_start(tmp_path: Path) -> None:
    config = LiveConfig.load(tmp_path / "absent.toml", required=False, topology=OFFLINE_ISO)
    assert config.current.pinning.namespaces == ("*",)
    assert config.describe_source() == (f"no configuration file at {tmp_path / 'absent.toml'}"
                                        ": using the built-in defaults")
    (tmp_path / "absent.toml").write_text(ALLOW_STORAGE)
    assert config.check_file() is True  # created later: picked up
    assert config.current.pinning.namespaces == ("storage",)


def test_before_the_first_decision_the_runtimes_config_may_change_every_engine_setting(
        path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A pre-installed plugin gets its drop-in config in Configure, before any container:
    the reservation and the pin annotation apply then, not only at a later restart."""
    import asyncio

    caplog.set_level(logging.INFO)

    from cpuset_adapters.nri.handler_port import RuntimeInfo
    from cpuset_adapters.static_topology import StaticTopologySource
    from cpuset_cli import bootstrap

    config = LiveConfig.load(path, required=True, topology=OFFLINE_ISO,
                             overrides={"runtime": {"status_socket": ""}})
    daemon = bootstrap.build_daemon(StaticTopologySource(OFFLINE_ISO),
                                    environ={"NRI_PLUGIN_SOCKET": "3"}, name="nri-cpuset",
                                    index="99", config=config)

    async def configure(text: str) -> None:
        daemon.handler.on_configure(RuntimeInfo(config=text, registration_timeout_ms=5000))

    asyncio.run(configure('[cpus]\nreserved = "0"\n[runtime]\nstatus_socket = "/run/x.sock"\n'))
    assert daemon.service.engine.settings.system_reserved == CPUSet([0])
    assert daemon.service.pusher.known() == {}
    assert engine(config) is daemon.service.engine
    assert config.current.cpus.reserved == "0"
    assert 'configure: applied cpus.reserved = "0" before the first decision' in caplog.text
    assert "unchanged" not in caplog.text
    # Not an engine setting, and given on the command line anyway.
    assert config.current.runtime.status_socket == ""
    daemon.service.synchronize([], [], source="synchronize")  # the first decision
    asyncio.run(configure('[cpus]\nreserved = "1"\n'))
    assert daemon.service.engine.settings.system_reserved == CPUSet([0])
    assert 'cpus.reserved ("0" -> "1") changed but needs a restart' in caplog.text


def test_the_daemon_exposes_the_observability_settings_it_runs_with(path: Path) -> None:
    from cpuset_adapters.static_topology import StaticTopologySource
    from cpuset_cli import bootstrap

    path.write_text('[observability]\nlisten = ":9100"\nlog_format = "console"\n')
    config = LiveConfig.load(path, required=True, topology=OFFLINE_ISO)
    daemon = bootstrap.build_daemon(StaticTopologySource(OFFLINE_ISO), environ={},
                                    name="nri-cpuset", index="99", config=config)
    assert (daemon.observability.listen, daemon.observability.log_format) == (":9100",
                                                                              "console")
    bare = bootstrap.build_daemon(StaticTopologySource(OFFLINE_ISO), environ={},
                                  name="nri-cpuset", index="99")
    assert bare.observability.listen == "127.0.0.1:9477"


def test_a_configmap_update_swapping_the_data_symlink_is_seen(tmp_path: Path) -> None:
    # The kubelet updates a mounted ConfigMap atomically: config.toml -> ..data/config.toml,
    # and ..data is a symlink it re-points at a new timestamped directory. The file itself is
    # never written, so the watcher must follow the links.
    first, second = tmp_path / "..2026_11_22_08_00_00.1", tmp_path / "..2026_11_22_08_01_00.2"
    first.mkdir()
    (first / "config.toml").write_text(ALLOW_STORAGE)
    (tmp_path / "..data").symlink_to(first.name)
    path = tmp_path / "config.toml"
    path.symlink_to("..data/config.toml")
    config = live(path)
    assert config.check_file() is None
    second.mkdir()
    (second / "config.toml").write_text('[pinning]\nnamespaces = ["team-*"]\n')
    (tmp_path / "..data_tmp").symlink_to(second.name)
    (tmp_path / "..data_tmp").rename(tmp_path / "..data")
    assert config.check_file() is True
    assert engine(config).settings.may_pin("team-b")
    assert not engine(config).settings.may_pin("storage")


def test_the_runtimes_config_sets_the_cri_socket_but_not_keys_in_use_before_it(
        path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A pre-installed plugin reads CRI only after Configure (the inventory): the drop-in's
    # cri_socket applies. The NRI socket and the listener are in use before Configure at
    # every start, so "needs a restart" would be a lie: the log says where the key belongs.
    caplog.set_level(logging.INFO)
    config = live(path)
    assert config.apply_runtime_config('[runtime]\ncri_socket = "/run/k3s/containerd.sock"\n'
                                       '[observability]\nlisten = "127.0.0.1:9999"\n')
    assert config.current.runtime.cri_socket == "/run/k3s/containerd.sock"
    assert config.current.observability.listen == "127.0.0.1:9477"
    assert ("configure: observability.listen cannot be set in the runtime's plugin config"
            in caplog.text)
    assert "needs a restart" not in caplog.text

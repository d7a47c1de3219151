"""The configuration on a real containerd (1.7 or 2.x): refused at startup when invalid, who may pin
(the namespace allowlist), reloads on SIGHUP and on file change (the last good configuration
kept when the new one is invalid), a running pin resized after its namespace lost the right
(it stays where it runs), and the pre-installed launcher started by containerd with its
configuration file and its drop-in plugin config.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpuset_adapters.cri.client import CriError
from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from cpuset_lab.resources import container_resources
from tests.e2e.plugin_harness import (
    ONLINE,
    SRC,
    Plugin,
    actual,
    cli,
    cpus,
    integer,
    needs_two_cpus,
    pod,
    serving,
    shared,
    wait_until,
)

pytestmark = pytest.mark.e2e

# Console logs, so the assertions below read the messages as written (the schema's default
# format is JSON once the observability work renders it).
CONSOLE = '[observability]\nlog_format = "console"\n'
ONLY_STORAGE = '[pinning]\nnamespaces = ["storage"]\n' + CONSOLE
REFUSED = "namespace 'default' may not use the annotation weka.io/cores-ids"


def write_unseen(path: Path, text: str) -> None:
    """Replace the file's content so that the watcher cannot see it (same inode, size and
    mtime): only SIGHUP can load it."""
    before = path.stat()
    padding = before.st_size - len(text.encode())
    assert padding >= 2, "the new content must be shorter than the old one"
    with path.open("r+b") as file:  # in place: same inode
        file.write((text + "#" + " " * (padding - 2) + "\n").encode())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(ONLY_STORAGE + "# " + "padding " * 40 + "\n")
    return path


@pytest.fixture
def plugin(lab: LabContainerd, cri: KubeletClient, tmp_path: Path,
           config_file: Path) -> Iterator[Plugin]:
    with serving(lab, Plugin(lab.nri_socket, tmp_path / "plugin.log",
                             ("--config", str(config_file)))) as running:
        yield running


def refused(cri: KubeletClient, lab: LabContainerd, namespace: str = "default") -> str:
    """Try a pin from ``namespace``; return the runtime's error ("" if it was admitted)."""
    with pod(cri, "pinned", QosClass.BURSTABLE, pins=str(ONLINE.last()),
             namespace=namespace) as pod_id:
        try:
            shared(cri, lab, pod_id, "io")
        except CriError as error:
            assert cri.list_containers(pod_id) == []
            return error.details
        return ""


def wait_for_log(plugin: Plugin, text: str, count: int = 1) -> None:
    wait_until(lambda: plugin.text().count(text) >= count,
               f"{text!r} in the log\n--- plugin log ---\n{plugin.text()[-3000:]}")


def test_an_invalid_config_stops_the_start_with_exit_2_naming_key_and_value(
        lab: LabContainerd, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[cpus]\nreserved = "0-x"\n[pinning]\nnamespaces = ["ok", ""]\n')
    result = cli("run", "--config", str(bad), "--nri-socket", str(lab.nri_socket),
                 "--status-socket", "", check=False)
    assert result.returncode == 2, result.stderr
    assert f"invalid configuration {bad} (2 problems)" in result.stderr
    assert 'pinning.namespaces[1] = "": empty pattern' in result.stderr
    assert 'cpus.reserved = "0-x": invalid CPU list' in result.stderr
    assert "registered" not in result.stderr + result.stdout


def test_a_pin_from_a_namespace_not_allowed_fails_creation_and_changes_nothing(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        before = actual(cri, app)
        details = refused(cri, lab)
        assert "nri-cpuset" in details
        assert REFUSED in details
        assert "allows: storage" in details
        assert actual(cri, app) == before
        assert "reason=pin-namespace-not-allowed" in plugin.text()
        assert refused(cri, lab, namespace="storage") == ""


def test_sighup_keeps_the_last_good_config_when_the_file_is_invalid_and_applies_a_valid_one(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, config_file: Path) -> None:
    assert plugin.process is not None
    write_unseen(config_file, '[pinning]\nnamespaces = ["*"]\n[cpus]\nreserved = "0-x"\n'
                 + CONSOLE)
    plugin.process.send_signal(signal.SIGHUP)
    wait_for_log(plugin, "SIGHUP: rejected")
    assert (f"SIGHUP: rejected {config_file}, keeping the last good configuration: "
            'cpus.reserved = "0-x": invalid CPU list') in plugin.text()
    assert REFUSED in refused(cri, lab)  # the allowlist still applies

    write_unseen(config_file, '[pinning]\nnamespaces = ["storage", "def*"]\n' + CONSOLE)
    plugin.process.send_signal(signal.SIGHUP)
    wait_for_log(plugin, "SIGHUP: applied pinning.namespaces")
    assert refused(cri, lab) == ""  # refused before, admitted now
    assert plugin.process.poll() is None


def test_a_changed_file_is_reloaded_by_itself(plugin: Plugin, lab: LabContainerd,
                                              cri: KubeletClient, config_file: Path) -> None:
    assert REFUSED in refused(cri, lab)
    config_file.write_text('[pinning]\nnamespaces = ["default"]\n' + CONSOLE)
    wait_for_log(plugin, "file change: applied pinning.namespaces = [\"default\"]")
    assert refused(cri, lab) == ""
    config_file.write_text('[pinning]\nnamespaces = ["default"]\n' + CONSOLE + 'lisn = ""\n')
    wait_for_log(plugin, "file change: rejected")
    assert "observability.lisn: unknown key" in plugin.text()
    assert refused(cri, lab) == ""  # the last good allowlist still admits it


def test_a_running_pin_whose_namespace_lost_the_right_is_resized_not_refused(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient, config_file: Path) -> None:
    """Found by the chaos soak: once the allowlist dropped a running pin's namespace, every
    resize of that pin (a kubelet's UpdateContainerResources) was refused, also after a
    Synchronize ran it shared, until the pod was recreated. It stays where it runs."""
    pin = CPUSet([ONLINE.last()])
    with pod(cri, "pinned", QosClass.BURSTABLE, pins=pin.format(), namespace="storage") as io:
        app = shared(cri, lab, io)
        assert cpus(cri, app) == pin
        config_file.write_text('[pinning]\nnamespaces = ["default"]\n' + CONSOLE)
        wait_for_log(plugin, 'file change: applied pinning.namespaces = ["default"]')
        cri.update_resources(app, container_resources(cpu_request="200m"))
        assert cpus(cri, app) == pin  # pinned until a Synchronize: it keeps its pin
        plugin.kill()
        plugin.start()
        plugin.wait_synchronized(2)
        wait_until(lambda: cpus(cri, app) == ONLINE, "the Synchronize running it shared")
        cri.update_resources(app, container_resources(cpu_request="300m"))
        assert cpus(cri, app) == ONLINE
        assert "pin-namespace-not-allowed" in plugin.text()  # reported at the Synchronize

@needs_two_cpus
def test_the_preinstalled_launcher_runs_with_its_config_file_and_drop_in(tmp_path: Path) -> None:
    """containerd starts the launcher with an empty environment: the allowlist comes from the
    file named at install-launcher, the reservation from the drop-in in plugin_config_path
    (NRI Configure), applied before the first container."""
    plugins, drop_ins = tmp_path / "plugins", tmp_path / "conf.d"
    log = tmp_path / "preinstalled.log"
    config = tmp_path / "config.toml"
    config.write_text(ONLY_STORAGE)
    drop_ins.mkdir()
    (drop_ins / "99-nri-cpuset.conf").write_text(f'[cpus]\nreserved = "{ONLINE.first()}"\n')
    own = LabContainerd(tmp_path / "lab", installation=find_installation(),
                        nri_plugin_path=plugins, nri_plugin_config_path=drop_ins)
    cli("install-launcher", "--plugin-dir", str(plugins), "--log-file", str(log),
        "--cri-socket", str(own.cri_address), "--config", str(config))
    launcher = plugins / "99-nri-cpuset"
    launcher.write_text(launcher.read_text().replace("exec ", f"PYTHONPATH={SRC} exec ", 1))
    try:
        own.start()
        own.import_image()
        client = own.client()
        text = log.read_text()
        assert f"configuration from {config}" in text
        assert (f'configure: applied cpus.reserved = "{ONLINE.first()}" before the first '
                "decision") in text
        assert REFUSED in refused(client, own)
        with pod(client, "db", QosClass.GUARANTEED) as db:
            exclusive = integer(client, own, db, 1, "postgres")
            # The reserved CPU is never given to an integer container.
            assert cpus(client, exclusive) == CPUSet([ONLINE.last()])
        assert refused(client, own, namespace="storage") == ""
    finally:
        own.close()

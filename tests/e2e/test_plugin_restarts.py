"""The plugin process on a real containerd (1.7 or 2.x): restarted after containers changed,
containerd restarting under it, SIGTERM, and the pre-installed plugin relearning after a crash.

The lab machine is small (see plugin_harness.py).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cpuset_core.cpuset import CPUSet
from cpuset_lab import plugin_log
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import find_installation
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from tests.e2e.plugin_harness import (
    ONLINE,
    SRC,
    Plugin,
    cli,
    cpus,
    needs_two_cpus,
    pod,
    shared,
    wait_until,
)

pytestmark = pytest.mark.e2e


@needs_two_cpus
def test_restarted_plugin_corrects_containers_created_while_it_was_down(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    last = ONLINE.last()
    with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
        shared(cri, lab, io, "io")
        plugin.kill()
        with pod(cri, "late", QosClass.BURSTABLE) as late:
            app = shared(cri, lab, late)
            assert cpus(cri, app) == ONLINE  # nobody pinned it
            plugin.start()
            plugin.wait_synchronized(2)
            wait_until(lambda: cpus(cri, app) == ONLINE - CPUSet([last]),
                       "synchronize to move the late shared container off the pin")


@needs_two_cpus
def test_plugin_reconnects_by_itself_when_containerd_restarts(
        plugin: Plugin, lab: LabContainerd, cri: KubeletClient) -> None:
    lab.restart()
    plugin.wait_synchronized(2)
    last = ONLINE.last()
    with pod(cri, "web", QosClass.BURSTABLE) as web:
        app = shared(cri, lab, web)
        with pod(cri, "io", QosClass.BURSTABLE, pins=str(last)) as io:
            pinned = shared(cri, lab, io, "io")
            assert cpus(cri, pinned) == CPUSet([last])
            assert cpus(cri, app) == ONLINE - CPUSet([last])


def test_sigterm_stops_the_plugin_with_exit_code_zero(lab: LabContainerd, tmp_path: Path) -> None:
    running = Plugin(lab.nri_socket, tmp_path / "plugin.log")
    running.start()
    running.wait_synchronized()
    assert running.stop() == 0


@needs_two_cpus
def test_preinstalled_plugin_pins_and_relearns_running_containers_after_a_crash(
        tmp_path: Path) -> None:
    """containerd starts the plugin from plugin_path; after a containerd crash the relaunched
    plugin learns the running containers again, so a new shared container still avoids a pin
    made before the crash. containerd 1.7 (NRI v0.6.1) never synchronizes a pre-installed
    plugin, so it reads them over CRI; 2.x (NRI v0.8.0) synchronizes it before serving CRI, so
    it reads nothing (decision 16: the inventory is for runtimes that send no timeouts)."""
    plugins = tmp_path / "plugins"
    log = tmp_path / "preinstalled.log"
    own = LabContainerd(tmp_path / "lab", installation=find_installation(),
                        nri_plugin_path=plugins)
    cli("install-launcher", "--plugin-dir", str(plugins), "--log-file", str(log),
        "--cri-socket", str(own.cri_address))
    launcher = plugins / "99-nri-cpuset"
    # The runtime gives the plugin no PYTHONPATH: make the source tree importable for it.
    launcher.write_text(launcher.read_text().replace("exec ", f"PYTHONPATH={SRC} exec ", 1))
    try:
        started = time.monotonic()
        own.start()
        startup = time.monotonic() - started
        own.import_image()
        client = own.client()
        last = ONLINE.last()
        with pod(client, "io", QosClass.BURSTABLE, pins=str(last)) as io:
            pinned = shared(client, own, io, "io")
            assert cpus(client, pinned) == CPUSet([last])
            assert "registered with the runtime as 99-nri-cpuset" in log.read_text()

            own.kill()
            own.start()
            wait_until(lambda: log.read_text().count("registered with the runtime") >= 2,
                       "the relaunched plugin to register")
            with pod(client, "web", QosClass.BURSTABLE) as web:
                app = shared(client, own, web)
                wait_until(lambda: cpus(client, app) == ONLINE - CPUSet([last]),
                           f"the pin to be known again\n{log.read_text()[-3000:]}")
            sources = {e["source"] for e in plugin_log.events(log.read_text(), "synchronized")}
            assert sources == ({"CRI inventory"} if own.runtime.name == "1.7"
                               else {"synchronize"})
            assert cpus(client, pinned) == CPUSet([last])
        print(f"containerd with the pre-installed plugin started in {startup:.2f} s")
    finally:
        own.close()

"""The node the soak runs on: the lab's containerd (the runtime ``--runtime`` chose) with the
``runc-faulty`` handler, the plugin (``plugin``) and the soak's kubelet on its CRI socket
(``kubelet``); the runtime as faults handle it (``parts.Runtime``)."""

from __future__ import annotations

from pathlib import Path

from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.containerd_install import Installation

from .kubelet import LabKubelet
from .parts import Pace
from .plugin import LabPlugin


class LabRuntime:
    """containerd restarted under the plugin, and runc refusing a container's updates."""

    def __init__(self, lab: LabContainerd, plugin: LabPlugin) -> None:
        self.lab, self.plugin = lab, plugin

    def restart(self) -> None:
        self.plugin.up = False
        self.plugin.process.next_join(self.lab.restart)
        self.plugin.up = True

    def refuse_updates(self, container_id: str) -> None:
        self.lab.update_faults.fail(container_id)

    def allow_updates(self, container_id: str) -> None:
        self.lab.update_faults.allow(container_id)


class LabNode:
    """containerd + ``nri-cpuset run`` in ``workdir``; ``verify_period`` goes to the plugin's
    configuration (the soak settles for that long after each step); every wait is
    ``pace.scale`` times longer (an emulated guest); ``quiet``: the plugin may quiet CPUs."""

    def __init__(self, workdir: Path, installation: Installation, *, reserved: CPUSet,
                 strict_reservation: bool, verify_period: int, pace: Pace,
                 quiet: bool = False) -> None:
        self.workdir = workdir
        self.verify_period = verify_period
        self.pace = pace
        self.lab = LabContainerd(workdir / "lab", installation=installation,
                                 request_timeout=f"{pace.request_timeout:g}s",
                                 registration_timeout=f"{pace.seconds(5):g}s",
                                 start_timeout=pace.seconds(120))
        self.plugin = LabPlugin(workdir, self.lab.nri_socket, cri_socket=self.lab.cri_address,
                                reserved=reserved,
                                strict_reservation=strict_reservation,
                                verify_period=verify_period, pace=pace, quiet=quiet)
        self.runtime = LabRuntime(self.lab, self.plugin)
        client = self.lab.client()
        client.timeout = max(client.timeout, pace.seconds(60))
        self.kubelet = LabKubelet(client, self.lab.image)

    def start(self, namespaces: tuple[str, ...]) -> None:
        self.lab.start()
        self.lab.import_image()
        self.plugin.write_config(namespaces)
        self.plugin.restart()

    def close(self) -> None:
        try:
            self.plugin.close()
        finally:
            self.lab.close()

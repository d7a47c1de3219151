"""The lab's node for the DaemonSet's pod: the manifests rendered as ``kubectl apply -k`` would
render them, every ``hostPath`` of the manifest mapped to what the running
:class:`~cpuset_lab.containerd.LabContainerd` has, the container's log read back from the CRI
log file, and the container's memory read from its cgroup (issue 33).

Host paths (:func:`lab_host_paths`): the lab containerd's NRI socket directory for
``/var/run/nri`` and its work directory for ``/run/containerd`` (where its ``containerd.sock``
lives, beside its state, as on a node); the real ``/sys`` and ``/sys/fs/cgroup`` (the plugin
must read the real topology and write the real cgroups of the lab's containers); a directory
of the test's own for ``/run/dbus``, ``/run/nri-cpuset`` and the kubelet's
``cpu_manager_state`` (written as the kubelet writes it with ``cpuManagerPolicy: none``), whose
real node paths the lab must not touch.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cpuset_adapters.cgroupfs import CGROUP_ROOT, cgroup_version, expand_systemd_path
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.daemonset.lab_node import LabNode

CPU_MANAGER_NONE: Final = '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}\n'
"""What the kubelet writes to ``cpu_manager_state`` with ``cpuManagerPolicy: none``."""


def render(directory: Path) -> str:
    """``kubectl kustomize DIRECTORY``: what ``kubectl apply -k`` sends (needs kubectl)."""
    return subprocess.run(["kubectl", "kustomize", str(directory)], check=True,  # noqa: S603,S607
                          capture_output=True, text=True, timeout=60).stdout


def lab_host_paths(lab: LabContainerd, root: Path) -> dict[str, Path]:
    """Every ``hostPath`` of ``deploy/kubernetes`` mapped to the lab's path for it; the node's
    own files of the test under ``root/host`` (the kubelet's state file written there)."""
    host = root / "host"
    state = host / "var/lib/kubelet/cpu_manager_state"
    state.parent.mkdir(parents=True, exist_ok=True)
    if not state.exists():
        state.write_text(CPU_MANAGER_NONE)
        state.chmod(0o600)
    return {
        "/var/run/nri": lab.nri_socket.parent,
        "/run/containerd": lab.cri_address.parent,
        "/sys": Path("/sys"),
        "/sys/fs/cgroup": CGROUP_ROOT,
        "/run/dbus": host / "run/dbus",
        "/run/nri-cpuset": host / "run/nri-cpuset",
        "/var/lib/kubelet/cpu_manager_state": state,
    }


def lab_node(lab: LabContainerd, root: Path, *, image: str,
             host_paths: Mapping[str, Path] | None = None) -> LabNode:
    """The :class:`LabNode` for one pod on ``lab``: ``host_paths`` (default
    :func:`lab_host_paths`), a fresh pod uid with the pod's volumes under
    ``root/kubelet/pods/<uid>/volumes`` (per pod, as the kubelet keeps them) and its logs under
    ``root/pods``, the cgroup driver of the lab's containerd, host network (no CNI here)."""
    uid = str(uuid.uuid4())
    return LabNode(node_name="lab-node", image=image, pod_uid=uid,
                   host_paths=dict(host_paths if host_paths is not None
                                   else lab_host_paths(lab, root)),
                   volumes_dir=root / "kubelet/pods" / uid / "volumes", log_root=root / "pods",
                   cgroup_driver="systemd" if lab.config.systemd_cgroup else "cgroupfs")


def log_messages(lines: list[str]) -> list[str]:
    """The ``event`` of every JSON log line (the plugin's message as written), else the line."""
    messages = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            messages.append(line)
            continue
        messages.append(str(record.get("event", line)) if isinstance(record, dict) else line)
    return messages


@dataclass(frozen=True, slots=True)
class Memory:
    """A container's memory as its cgroup counts it: ``rss`` the anonymous memory (v1
    ``memory.stat`` ``rss``, v2 ``anon``), ``usage`` everything charged (v1
    ``memory.usage_in_bytes``, v2 ``memory.current``: page cache too), in bytes."""

    rss: int
    usage: int


def container_memory(cgroups_path: str, *, root: Path = CGROUP_ROOT) -> Memory:
    """:class:`Memory` of the container whose cgroup is ``cgroups_path``."""
    relative = expand_systemd_path(cgroups_path).lstrip("/")
    if cgroup_version(root) == 2:
        directory, anon, usage = root / relative, "anon", "memory.current"
    else:
        directory, anon, usage = root / "memory" / relative, "rss", "memory.usage_in_bytes"
    stat = dict(line.split() for line in (directory / "memory.stat").read_text().splitlines())
    return Memory(rss=int(stat[anon]), usage=int((directory / usage).read_text()))

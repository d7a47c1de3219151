"""Where things are on a node by default, in one place: the CLI's flags, the configuration
schema and the adapters all take their defaults from here (standard library only, so the CLI
can name them without importing the adapters themselves)."""

from __future__ import annotations

from typing import Final

NRI_SOCKET: Final = "/var/run/nri/nri.sock"
CRI_SOCKET: Final = "/run/containerd/containerd.sock"
STATUS_SOCKET: Final = "/run/nri-cpuset/status.sock"
CONFIG_FILE: Final = "/etc/nri-cpuset/config.toml"
CONTAINERD_CONFIG: Final = "/etc/containerd/config.toml"
KUBELET_CPU_MANAGER_STATE: Final = "/var/lib/kubelet/cpu_manager_state"
CGROUP_ROOT: Final = "/sys/fs/cgroup"
QUIET_JOURNAL: Final = "/run/nri-cpuset/quiet-originals.json"
"""Quiet CPUs' originals (issue 43): on a tmpfs, as the kernel state it restores is since boot."""

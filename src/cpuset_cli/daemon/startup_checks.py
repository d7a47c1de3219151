"""Checks before the daemon starts, each taking paths and returning what it found.

* the kubelet's static CPU manager owns the same cpusets: refuse to start (unless allowed);
* the NRI socket is missing (external plugins): say how to enable NRI, then wait for it —
  a DaemonSet may well start before containerd, and the session retries with backoff;
* NRI is disabled in containerd's config while the socket is missing: refuse to start, since
  the socket cannot appear before containerd's config changes and containerd restarts;
* the topology publisher declares ``single-numa-node`` to the scheduler while the node enforces
  no strict alignment: say so (a burst that outruns the published object spans nodes).

Unreadable or malformed files say nothing: these checks guard against known conflicts, they
do not replace the runtime's own validation.
"""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path
from typing import Final

import attrs

from cpuset_adapters import default_paths
from cpuset_adapters.config import Config
from cpuset_core.policy.alignment import Alignment

DEFAULT_CONTAINERD_CONFIG: Final = default_paths.CONTAINERD_CONFIG
NRI_SECTION: Final = 'plugins."io.containerd.nri.v1.nri"'

ENABLE_NRI: Final = (
    f"enable NRI in containerd: in {DEFAULT_CONTAINERD_CONFIG} set `disable = false` under "
    f"[{NRI_SECTION}] (containerd 1.7, config version 2, disables NRI by default; 2.x enables "
    "it unless that key says otherwise), make its socket_path match runtime.nri_socket, and "
    "restart containerd")


@attrs.frozen
class Finding:
    """Something a startup check found; a ``fatal`` one stops the daemon (exit code 2)."""

    message: str
    fatal: bool


def static_cpu_manager(state_file: Path) -> str | None:
    """A message when the kubelet's CPU manager state says its policy is ``static``."""
    try:
        state = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("policyName") != "static":
        return None
    return (f"the kubelet's static CPU manager is active ({state_file} has policyName "
            "\"static\"): it sets the same cpusets as nri-cpuset and the two would undo each "
            "other's work. Set the kubelet's cpuManagerPolicy to none (and remove that file "
            "while the kubelet is stopped), or, if you know the two do not overlap, set "
            "runtime.allow_static_cpu_manager = true or pass --allow-static-cpu-manager")


def nri_socket_missing(socket: Path) -> str | None:
    """A message when nothing that could be the runtime's NRI socket is at ``socket``."""
    try:
        mode = socket.stat().st_mode
    except FileNotFoundError:
        return (f"the NRI socket {socket} does not exist: containerd is not running yet, or "
                f"NRI is not enabled; waiting for it. To {ENABLE_NRI}")
    except OSError as exc:
        return f"the NRI socket {socket} cannot be checked ({exc}); trying it anyway"
    if not stat.S_ISSOCK(mode):
        return (f"{socket} is not a socket: check runtime.nri_socket (or --nri-socket) against "
                f"socket_path in containerd's [{NRI_SECTION}] section")
    return None


def nri_disabled(containerd_config: Path) -> str | None:
    """A message when containerd's config explicitly disables NRI."""
    try:
        document = tomllib.loads(containerd_config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    plugins = document.get("plugins")
    section = plugins.get("io.containerd.nri.v1.nri") if isinstance(plugins, dict) else None
    if not isinstance(section, dict) or section.get("disable") is not True:
        return None
    return (f"NRI is disabled in containerd ({containerd_config} sets `disable = true` under "
            f"[{NRI_SECTION}]): set it to false and restart containerd")


def declared_policy_not_enforced(config: Config) -> str | None:
    """A message when the NodeResourceTopology object promises the scheduler ``single-numa-node``
    while ``cpus.alignment`` lets a container span nodes."""
    publisher, alignment = config.topology_publisher, config.cpus.alignment
    if not publisher.enabled or publisher.policy != "single-numa-node" or \
            Alignment(alignment).strict:
        return None
    return (f"topology_publisher.policy = \"single-numa-node\" tells the scheduler this node "
            f"admits only containers that fit one NUMA node, but cpus.alignment = "
            f"\"{alignment}\" does not enforce it: a pod scheduled on an object that is a "
            f"moment old spans nodes instead of being refused. Set cpus.alignment = "
            f"\"single-numa-node\" to enforce what is declared (the object then declares "
            f"cpus.alignment, and topology_publisher.policy no longer matters)")


def run_checks(config: Config, *, launched_by_runtime: bool,
               containerd_config: Path) -> list[Finding]:
    """Everything the startup checks found for ``config``, fatal findings first."""
    findings: list[Finding] = []
    if not config.runtime.allow_static_cpu_manager:
        problem = static_cpu_manager(Path(config.runtime.kubelet_cpu_manager_state))
        if problem:
            findings.append(Finding(problem, fatal=True))
    if not launched_by_runtime:  # a pre-installed plugin was handed its socket
        missing = nri_socket_missing(Path(config.runtime.nri_socket))
        if missing:
            disabled = nri_disabled(containerd_config)
            findings.append(Finding(disabled, fatal=True) if disabled
                            else Finding(missing, fatal=False))
    if mismatch := declared_policy_not_enforced(config):
        findings.append(Finding(mismatch, fatal=False))
    return findings

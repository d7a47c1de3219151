"""Plants: the DaemonSet's pod with a broken manifest must fail the checks
``test_daemonset_pod.py`` passes (issue 33), so a change to ``deploy/kubernetes`` that breaks
the plugin inside its pod cannot pass unseen. Each case edits the rendered DaemonSet, runs the
pod as the kubelet would and expects :func:`job_problems` to name what it cannot do.

The NRI socket's directory mounted read-only is no plant: ``connect()`` on a unix socket checks
the socket's permission bits, never the mount's read-only flag, so the plugin registers as well
(the last test keeps that fact; the CRI socket is mounted read-only for the same reason).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cpuset_lab.containerd import LabContainerd
from cpuset_lab.daemonset.running import start_pod
from tests.e2e.daemonset_harness import (
    import_daemonset_image,
    job_problems,
    port_free,
    translated,
)
from tests.e2e.plugin_harness import PATIENCE

pytestmark = pytest.mark.e2e

Edit = Callable[[dict[str, Any]], None]


def _spec(daemonset: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = daemonset["spec"]["template"]["spec"]
    return spec


def drop_volume(name: str) -> Edit:
    """The volume ``name`` and its mount gone from the pod."""
    def edit(daemonset: dict[str, Any]) -> None:
        spec = _spec(daemonset)
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] != name]
        container = spec["containers"][0]
        container["volumeMounts"] = [m for m in container["volumeMounts"] if m["name"] != name]
    return edit


def read_only(name: str) -> Edit:
    """The mount of volume ``name`` made read-only."""
    def edit(daemonset: dict[str, Any]) -> None:
        for mount in _spec(daemonset)["containers"][0]["volumeMounts"]:
            if mount["name"] == name:
                mount["readOnly"] = True
    return edit


PLANTS: dict[str, tuple[Edit, tuple[str, ...], tuple[str, ...]]] = {
    # Ready, and placements still right through the runtime: only its mount's work is missing.
    "no-cgroup-mount": (drop_volume("host-cgroup"), ("/sys/fs/cgroup",),
                        ("kernel fast path is off", "was not repaired")),
    "no-nri-socket-mount": (drop_volume("nri-socket-dir"), ("/var/run/nri",), ("not ready",)),
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_broken_manifest_fails_the_pod_checks(lab: LabContainerd, tmp_path: Path,
                                                plant: str) -> None:
    edit, dropped, expected = PLANTS[plant]
    image = import_daemonset_image(lab)
    daemonset = translated(lab, tmp_path, image, edit=edit, drop_host_paths=dropped)
    assert port_free(daemonset)
    running = start_pod(lab.client(), daemonset)
    try:
        # A plant that must stay unready is given 15 s to fail; one that must get ready (and
        # fail later) gets the hang guard for that, since a slow start is no verdict.
        ready = 15 if any(text.startswith("not ready") for text in expected) else PATIENCE
        problems = job_problems(running, lab.client(), lab, ready_timeout=ready,
                                repair_timeout=15)
    finally:
        running.stop()
        lab.cleanup()
    assert problems, f"the plant {plant} went unnoticed"
    for text in expected:
        assert any(text in problem for problem in problems), problems


def test_the_nri_socket_dir_read_only_still_connects(lab: LabContainerd, tmp_path: Path) -> None:
    image = import_daemonset_image(lab)
    daemonset = translated(lab, tmp_path, image, edit=read_only("nri-socket-dir"))
    [mount] = [m for m in daemonset.container_config.mounts if m.container_path == "/var/run/nri"]
    assert mount.readonly
    running = start_pod(lab.client(), daemonset)
    try:
        running.wait_ready(timeout=PATIENCE)
    finally:
        running.stop()
        lab.cleanup()

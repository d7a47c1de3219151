"""The quiet-cpus kustomize component: the host's /proc/irq and /sys/devices/system/cpu
mounted writable where the plugin is told (``--proc-root /host/proc``, the base's
``--sysfs-root /host/sys``), and nothing else: no privilege, capability, host namespace or
wider host path; the base alone mounts neither."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.unit.deploy.kustomize_render import needs_kubectl, pod_of, render


def mounts(pod: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """Each host path the container mounts: where, and whether read-only."""
    volumes = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    return {volumes[m["name"]]: (m["mountPath"], m.get("readOnly", False))
            for m in pod["containers"][0]["volumeMounts"] if m["name"] in volumes}


@needs_kubectl
def test_the_base_alone_mounts_neither_irqs_nor_cpu_subtree(tmp_path: Path) -> None:
    pod = pod_of(render(tmp_path))
    assert "/proc/irq" not in mounts(pod)
    assert "/sys/devices/system/cpu" not in mounts(pod)
    assert mounts(pod)["/sys"] == ("/host/sys", True)
    assert "--proc-root" not in pod["containers"][0]["args"]


@needs_kubectl
def test_the_component_mounts_irqs_and_the_cpu_subtree_writable_and_names_the_proc_root(
        tmp_path: Path) -> None:
    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    base = pod_of(render(tmp_path / "without"))
    pod = pod_of(render(tmp_path / "with", "quiet-cpus"))
    found = mounts(pod)
    assert found["/proc/irq"] == ("/host/proc/irq", False)
    # Nested in the read-only /host/sys, so the plugin's one sysfs root sees it writable.
    assert found["/sys/devices/system/cpu"] == ("/host/sys/devices/system/cpu", False)
    assert {v["name"]: v["hostPath"]["type"] for v in pod["volumes"]
            if v["name"] in ("host-proc-irq", "host-sys-cpu")} == {
        "host-proc-irq": "Directory", "host-sys-cpu": "Directory"}
    args = pod["containers"][0]["args"]
    assert args[-2:] == ["--proc-root", "/host/proc"]
    assert args[args.index("--sysfs-root") + 1] == "/host/sys"
    # Nothing else changes: the same security context, namespaces and other mounts.
    container, before = pod["containers"][0], base["containers"][0]
    assert container["securityContext"] == before["securityContext"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert not {"hostPID", "hostIPC"} & set(pod)
    assert pod["hostNetwork"] is False
    assert {k: v for k, v in found.items()
            if k not in ("/proc/irq", "/sys/devices/system/cpu")} == mounts(base)


@needs_kubectl
def test_the_component_goes_beside_the_others(tmp_path: Path) -> None:
    pod = pod_of(render(tmp_path, "events", "quiet-cpus"))
    assert pod["containers"][0]["args"][-3:] == ["--events", "--proc-root", "/host/proc"]
    assert "/proc/irq" in mounts(pod)

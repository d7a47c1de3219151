"""The DaemonSet's pod on the lab's containerd (issue 33): the image ``scripts/build-image``
built, imported; ``deploy/kubernetes`` rendered and translated for the lab's node
(``cpuset_lab.daemonset``); and what "the plugin does its job" means, checked from outside the
pod (its probe, its log, placements and a repair read back from the kernel).

Only one plugin may be registered with the lab's containerd at a time, so the pod tests never
use the ``plugin`` or ``cri`` fixtures (``cri``'s teardown removes every pod, the plugin's
too): they drive ``lab.client()`` and remove their own pods.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from cpuset_adapters.cgroupfs import cgroup_dir
from cpuset_core.cpuset import CPUSet
from cpuset_lab.containerd import LabContainerd
from cpuset_lab.daemonset import DaemonSetPod, translate
from cpuset_lab.daemonset.image_archive import archive_image_name, archive_path, stale
from cpuset_lab.daemonset.lab_host import lab_host_paths, lab_node, log_messages, render
from cpuset_lab.daemonset.running import PROBE_HOST, RunningPod, probe_status
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import QosClass
from tests.e2e.plugin_harness import ONLINE, PATIENCE, cpus, pod, shared, wait_until

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = os.environ.get("NRI_CPUSET_E2E_REQUIRED") == "1"
KERNEL_FIRST = "other containers' cpuset updates: kernel first"


def import_daemonset_image(lab: LabContainerd) -> str:
    """The plugin's image in the lab's containerd (imported once); its name. Without the
    archive: skipped, or failed under ``NRI_CPUSET_E2E_REQUIRED=1``."""
    archive = archive_path(ROOT)
    state = stale(archive, ROOT)
    if state:
        message = (f"the plugin's image {archive} is {state}; run `bash scripts/build-image` "
                   "first (root, podman)")
        if REQUIRED:
            pytest.fail(f"NRI_CPUSET_E2E_REQUIRED=1 but {message}", pytrace=False)
        pytest.skip(message)
    name = archive_image_name(archive)
    client = lab.client()
    if client.image_status(name) is None:
        lab.import_image(archive)
        assert client.image_status(name) is not None, f"{archive} did not import as {name}"
    return name


def translated(lab: LabContainerd, root: Path, image: str, *,
               edit: Callable[[dict[str, Any]], None] | None = None,
               drop_host_paths: tuple[str, ...] = (),
               host_paths: Mapping[str, Path] | None = None,
               components: tuple[str, ...] = ()) -> DaemonSetPod:
    """``deploy/kubernetes`` rendered and translated for the lab (a fresh pod: new uid and
    name); ``edit`` changes the rendered DaemonSet first (a plant), ``drop_host_paths`` the
    host paths it no longer mounts, ``host_paths`` the lab's paths replaced or added (a node's
    real one where the lab may use it: the VM's system bus, the quiet-cpus component's
    ``/proc/irq``), ``components`` those of ``deploy/kubernetes/components`` the user's
    overlay adds."""
    rendered = render(user_overlay(root, image, components))
    if edit is not None:
        documents = [d for d in yaml.safe_load_all(rendered) if d]
        edit(next(d for d in documents if d["kind"] == "DaemonSet"))
        rendered = yaml.safe_dump_all(documents)
    paths = {**lab_host_paths(lab, root), **(host_paths or {})}
    for path in drop_host_paths:
        del paths[path]
    return translate(rendered, lab_node(lab, root, image=image, host_paths=paths))


def user_overlay(root: Path, image: str, components: tuple[str, ...] = ()) -> Path:
    """The overlay docs/operations.md's install step 2 has a user write, naming ``image``
    (``REPOSITORY:TAG``) and adding ``components``: what ``kubectl apply -k`` renders is what
    the pod runs."""
    repository, _, tag = image.rpartition(":")
    overlay = root / "-".join((f"overlay-{tag}", *components))
    overlay.mkdir(parents=True, exist_ok=True)
    base = os.path.relpath(ROOT / "deploy/kubernetes", overlay)  # kustomize: never absolute
    added = ", ".join(f"{base}/components/{name}" for name in components)
    (overlay / "kustomization.yaml").write_text(
        f"resources: [{base}]\n"
        f"images: [{{name: nri-cpuset, newName: {repository}, newTag: {tag}}}]\n"
        + (f"components: [{added}]\n" if components else ""))
    return overlay


def port_free(running_pod: DaemonSetPod) -> bool:
    """Nothing answers on the pod's probe port yet (no other plugin of a test holds it)."""
    return all(probe_status(probe, PROBE_HOST) is None for probe in running_pod.probes)


def messages(running: RunningPod) -> list[str]:
    return log_messages(running.log_lines())


def wait_for_message(running: RunningPod, text: str, timeout: float = PATIENCE) -> None:
    wait_until(lambda: any(text in m for m in messages(running)),
               f"{text!r} in the pod's log\n--- its log ---\n"
               + "\n".join(messages(running)[-20:]), timeout=timeout)


def drift_repaired(client: KubeletClient, lab: LabContainerd,
                   timeout: float = PATIENCE) -> bool:
    """The plugin's verifier at work through its ``/host/cgroup`` mount: a shared container's
    ``cpuset.cpus`` changed behind its back (one CPU) is written back to the whole pool
    within ``timeout``."""
    with pod(client, "drift", QosClass.BURSTABLE) as pod_id:
        cid = shared(client, lab, pod_id)
        wait_until(lambda: cpus(client, cid) == ONLINE, "the shared container on every CPU")
        status = client.container_status(cid)
        assert status.cgroups_path is not None
        directory = cgroup_dir(status.cgroups_path)
        (directory / "cpuset.cpus").write_text(str(ONLINE.first()))
        assert cpus(client, cid) == CPUSet([ONLINE.first()])
        try:
            wait_until(lambda: cpus(client, cid) == ONLINE, "the verifier's repair", timeout)
        except AssertionError:
            return False
        return True


def job_problems(running: RunningPod, client: KubeletClient, lab: LabContainerd, *,
                 ready_timeout: float = PATIENCE, repair_timeout: float = PATIENCE) -> list[str]:
    """What keeps the pod from doing its whole job ([] when nothing): ready, the kernel fast
    path on (other containers' cpusets written through ``/host/cgroup``), and drift repaired.
    The bounds are hang guards for a pod that works; a plant (a pod that must fail) passes
    shorter ones, since how long it was given to fail is no verdict on speed."""
    try:
        running.wait_ready(timeout=ready_timeout)
    except AssertionError as error:
        return [f"not ready: {str(error).splitlines()[0]}"]
    problems = []
    wait_for_message(running, "other containers' cpuset updates:")
    if not any(m.startswith(KERNEL_FIRST) for m in messages(running)):
        found = [m for m in messages(running) if "cpuset updates:" in m]
        problems.append(f"the kernel fast path is off: {found}")
    if len(ONLINE) > 1 and not drift_repaired(client, lab, repair_timeout):
        problems.append("a shared container's cpuset changed behind its back was not repaired")
    return problems

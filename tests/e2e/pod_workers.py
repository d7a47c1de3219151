"""Pods run the way the kubelet's pod worker runs them (``cpuset_lab.pod_worker``), for the
e2e tests of containers that never run: a worker per pod, a container whose start fails as the
runtime says, and a kubelet syncing its workers until enough attempts exist."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from cpuset_lab.containerd import LabContainerd
from cpuset_lab.kubelet import KubeletClient
from cpuset_lab.pod_spec import PodSpec, QosClass, cgroup_parent
from cpuset_lab.pod_worker import Attempt, Backoff, ContainerSpec, PodWorker
from cpuset_lab.resources import guaranteed
from tests.e2e.plugin_harness import KEY, PATIENCE

BACKOFF = Backoff(initial=2.0, cap=8.0)
"""The kubelet's 10 s doubling to 5 min, scaled down for a test."""
MISSING = ["/nonexistent"]


@contextmanager
def worker(cri: KubeletClient, lab: LabContainerd, name: str, qos: QosClass,
           *containers: ContainerSpec, pins: str | None = None) -> Iterator[PodWorker]:
    """A pod worker for pod ``name`` (pinned to ``pins`` if given); its sandboxes go at the
    end."""
    uid = str(uuid.uuid4())
    spec = PodSpec(name=name, uid=uid, cgroup_parent=cgroup_parent(qos, uid),
                   annotations={KEY: pins} if pins is not None else {})
    running = PodWorker(cri, spec, containers, lab.image, backoff=BACKOFF)
    try:
        yield running
    finally:
        running.close()


def missing_binary(name: str = "app") -> ContainerSpec:
    """A Guaranteed 1-CPU container whose command does not exist: its start fails."""
    return ContainerSpec(name=name, resources=guaranteed(1, "64Mi"), command=MISSING)


def failed_as_the_runtime_says(attempt: Attempt) -> bool:
    return (attempt.failed_at == "start" and "nri-cpuset" not in attempt.error
            and "/nonexistent" in attempt.error)


def sync_until_attempts(workers: list[PodWorker], count: int) -> None:
    """One kubelet syncing ``workers`` every 0.2 s until each has made ``count`` attempts at
    its container ``app``. How many attempts a second brings is the back-off's and the
    machine's business; that each one fails as the runtime says is the test's."""
    deadline = time.monotonic() + PATIENCE
    while any(len(w.of("app")) < count for w in workers):
        assert time.monotonic() < deadline, (
            f"fewer than {count} attempts after {PATIENCE:.0f} s: "
            f"{[len(w.of('app')) for w in workers]}")
        for w in workers:
            w.sync()
        time.sleep(0.2)

"""Reading every live pod and container over CRI, as the facts a Synchronize would carry.

For a pre-installed plugin on a runtime that never synchronizes it (containerd 1.7, NRI < v0.7):
without this, after a containerd restart the relaunched plugin would not know the containers
that are still running and could hand out CPUs they hold.
"""

from __future__ import annotations

from cpuset_adapters.cri.client import CriClient, CriError
from cpuset_core import ContainerFacts, PodFacts

_LIVE = frozenset({"CONTAINER_RUNNING", "CONTAINER_CREATED"})


def read_inventory(client: CriClient) -> tuple[list[PodFacts], list[ContainerFacts]]:
    """Return the pods and the created or running containers, like NRI's Synchronize (which
    sends every pod whose state is known and leaves out exited containers). CRI reports unset
    values as 0 / ""; they become ``None`` / "" as NRI would report them. A pod or container
    removed while it is being read is left out. Raises ``CriError`` when the runtime does not
    answer.
    """
    pods: list[PodFacts] = []
    for info in client.list_pods():
        try:
            status = client.pod_status(info.id)
        except CriError as exc:
            if exc.code_name == "NOT_FOUND":
                continue
            raise
        pods.append(PodFacts(sandbox_id=info.id, namespace=info.namespace, name=info.name,
                             uid=info.uid, annotations=dict(status.annotations),
                             cgroup_parent=status.cgroup_parent or ""))
    containers: list[ContainerFacts] = []
    for container in client.list_containers():
        if container.state not in _LIVE:
            continue
        try:
            state = client.container_status(container.id)
            r = state.resources
        except CriError as exc:
            if exc.code_name == "NOT_FOUND":
                continue
            raise
        containers.append(ContainerFacts(
            id=container.id, sandbox_id=container.pod_id, name=container.name,
            cpu_shares=(r.cpu_shares or None) if r else None,
            cpu_quota=(r.cpu_quota or None) if r else None,
            cpu_period=(r.cpu_period or None) if r else None,
            memory_limit=(r.memory_limit or None) if r else None,
            cpus=r.cpuset_cpus if r else "", mems=r.cpuset_mems if r else "",
            cgroups_path=state.cgroups_path or ""))
    return pods, containers

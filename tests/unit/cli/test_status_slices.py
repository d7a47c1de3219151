"""The daemon makes the status document a slice at a time: a hook that arrives meanwhile is
answered between slices, not after the whole document."""

from __future__ import annotations

import asyncio

from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap, state_view
from cpuset_core import ContainerFacts, PodFacts
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology


def test_other_work_on_the_loop_runs_between_the_documents_slices() -> None:
    daemon = bootstrap.build_daemon(StaticTopologySource(build_topology(DUAL_SOCKET_HT)),
                                    environ={}, name="nri-cpuset", index="99",
                                    socket_path="/nonexistent")
    for n in range(3 * state_view.SLICE):
        pod = PodFacts(sandbox_id=f"s{n}", namespace="ns", name=f"p{n}",
                       cgroup_parent=f"/kubepods/burstable/pod{n}")
        daemon.service.admit(pod, ContainerFacts(id=f"c{n:04d}", sandbox_id=f"s{n}",
                                                 name="main"))
    order: list[str] = []

    async def hook() -> None:
        order.append("hook")

    async def read() -> bytes:
        document = await daemon.introspection.snapshot()
        order.append("document")
        return document

    async def main() -> bytes:
        reading = asyncio.create_task(read())
        await asyncio.sleep(0)  # the read has started: its first slice is done
        await asyncio.create_task(hook())
        return await reading

    document = asyncio.run(main())
    assert order == ["hook", "document"]
    assert len(state_view.decode(document).containers) == 3 * state_view.SLICE

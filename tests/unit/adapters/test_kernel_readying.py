"""Containers readied for their first write off the hooks' path: in the order queued, once
each, a chunk per turn of the event loop (a hook gets in between), nothing without a loop,
nothing for a container gone or after a resync, and a failure never stops the rest."""

from __future__ import annotations

import asyncio

import pytest

from cpuset_adapters import kernel_readying
from cpuset_adapters.kernel_readying import KernelReadying


async def turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_queued_containers_are_readied_once_each_in_order_a_chunk_per_turn() -> None:
    readied: list[str] = []
    readying = KernelReadying(readied.append)
    ids = [f"c{n}" for n in range(kernel_readying.CHUNK * 2 + 3)]

    async def scenario() -> None:
        readying.queue(ids)
        readying.queue(ids[:5])  # queued already: readied once
        await turns(1)
        assert readied == ids[:kernel_readying.CHUNK]  # one chunk, then the loop's turn
        await turns(3)

    asyncio.run(scenario())
    assert readied == ids
    assert len(readying) == 0


def test_a_container_gone_or_a_resync_drops_what_is_queued() -> None:
    readied: list[str] = []
    readying = KernelReadying(readied.append)

    async def scenario() -> None:
        readying.queue(["a", "b", "c"])
        readying.drop("b")
        await turns(2)
        readying.queue(["d", "e"])
        readying.clear()
        await turns(2)

    asyncio.run(scenario())
    assert readied == ["a", "c"]


def test_without_a_running_loop_nothing_is_queued() -> None:
    readied: list[str] = []
    readying = KernelReadying(readied.append)
    readying.queue(["a"])
    assert (len(readying), readied) == (0, [])


def test_a_failure_is_logged_at_debug_and_the_rest_are_readied(
        caplog: pytest.LogCaptureFixture) -> None:
    readied: list[str] = []

    def ready(container_id: str) -> None:
        if container_id == "bad":
            raise OSError("no such cgroup")
        readied.append(container_id)

    readying = KernelReadying(ready)

    async def scenario() -> None:
        readying.queue(["a", "bad", "b"])
        await turns(2)

    with caplog.at_level("DEBUG", logger="nri_cpuset.kernel"):
        asyncio.run(scenario())
    assert readied == ["a", "b"]
    assert "readying a container's cgroup failed" in caplog.text

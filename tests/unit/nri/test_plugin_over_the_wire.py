"""The whole plugin (bootstrap's daemon: session + handler + engine + pusher) over the real wire
protocol against the runtime double, for both runtime generations: containerd 1.7 (NRI v0.6.1)
and containerd 2.x (v0.12.2, chunked Synchronize, per-event RPCs)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.static_topology import StaticTopologySource
from cpuset_cli import bootstrap
from cpuset_cli.daemon.plugin import Daemon
from cpuset_lab.machines import DUAL_SOCKET_HT, build_topology
from tests.builders.nri import container, pod
from tests.support.nri_runtime import CallError, RuntimeDouble

TOPOLOGY = build_topology(DUAL_SOCKET_HT)


def run(scenario: Callable[[RuntimeDouble, Daemon], Awaitable[None]], tmp_path: Path, *,
        version: str, **double: object) -> None:
    socket = tmp_path / "nri.sock"

    async def main() -> None:
        async with RuntimeDouble(socket, version=version, **double) as runtime:  # type: ignore[arg-type]
            daemon = bootstrap.build_daemon(StaticTopologySource(TOPOLOGY), environ={},
                                            name="nri-cpuset", index="99",
                                            socket_path=str(socket))
            task = asyncio.create_task(daemon.run())
            try:
                await runtime.wait_ready()
                await scenario(runtime, daemon)
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            assert runtime.violations == []

    asyncio.run(main())


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_synchronize_then_create_pins_and_shrinks_the_pool(tmp_path: Path, version: str) -> None:
    web = pod("web", qos="burstable")
    app = container("app", web, cpuset="")

    async def scenario(runtime: RuntimeDouble, daemon: Daemon) -> None:
        conn = runtime.plugin
        assert {u.container_id: u.linux.resources.cpu.cpus for u in conn.sync_updates} == {
            app.id: "0-15"}
        io = pod("io", qos="burstable", pins="2-3")
        response = await runtime.create_container(io, container("io", io))
        assert response is not None
        cpu = response.adjust.linux.resources.cpu
        assert (cpu.cpus, cpu.mems) == ("2-3", "0")
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in response.update] == [
            (app.id, "0-1,4-15")]
        assert daemon.service.synchronized

    run(scenario, tmp_path, version=version, pods=[web], containers=[app])


def test_chunked_synchronize_sees_every_container(tmp_path: Path) -> None:
    pods = [pod(f"p{n}", qos="burstable") for n in range(20)]
    containers = [container(f"c{n}", p) for n, p in enumerate(pods)]

    async def scenario(runtime: RuntimeDouble, daemon: Daemon) -> None:
        assert len(runtime.plugin.sync_updates) == 20
        assert len(daemon.service.ledger) == 20

    run(scenario, tmp_path, version="0.12.2", pods=pods, containers=containers, sync_chunk=8)


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_rejection_reaches_the_runtime_as_an_error_status(tmp_path: Path, version: str) -> None:
    async def scenario(runtime: RuntimeDouble, daemon: Daemon) -> None:
        bad = pod("bad", qos="burstable", pins="99")
        with pytest.raises(CallError) as caught:
            await runtime.create_container(bad, container("io", bad))
        assert "names CPU(s) 99 that are not online" in caught.value.message

    run(scenario, tmp_path, version=version)


@pytest.mark.parametrize("version", ["0.6.1", "0.12.2"])
def test_remove_without_stop_sends_the_pool_growth_from_the_background(
        tmp_path: Path, version: str) -> None:
    web = pod("web", qos="burstable")
    app = container("app", web, cpuset="0-15")

    async def scenario(runtime: RuntimeDouble, daemon: Daemon) -> None:
        db = pod("db")
        pg = container("pg", db, cpus=4)
        await runtime.create_container(db, pg)
        await runtime.remove_container(db, pg)
        request = await runtime.wait_update()
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in request.update] == [
            (app.id, "0-15")]

    run(scenario, tmp_path, version=version, pods=[web], containers=[app])


def test_stop_releases_on_the_response(tmp_path: Path) -> None:
    web = pod("web", qos="burstable")
    app = container("app", web, cpuset="0-15")

    async def scenario(runtime: RuntimeDouble, daemon: Daemon) -> None:
        db = pod("db")
        pg = container("pg", db, cpus=2)
        await runtime.create_container(db, pg)
        response = await runtime.stop_container(db, pg)
        assert response is not None
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in response.update] == [
            (app.id, "0-15")]

    run(scenario, tmp_path, version="0.12.2", pods=[web], containers=[app])


def test_update_container_keeps_the_pin_against_the_kubelets_cpuset(tmp_path: Path) -> None:
    async def scenario(runtime: RuntimeDouble, daemon: Daemon) -> None:
        io = pod("io", qos="burstable", pins="5")
        ctr = container("io", io)
        await runtime.create_container(io, ctr)
        response = await runtime.update_container(io, ctr, pb.LinuxResources(
            cpu=pb.LinuxCPU(cpus="0-15")))
        assert response is not None
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in response.update] == [
            (ctr.id, "5")]

    run(scenario, tmp_path, version="0.6.1")

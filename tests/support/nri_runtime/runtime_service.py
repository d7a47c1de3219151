"""The Runtime service containerd serves a plugin on conn 2: RegisterPlugin, once per
connection (§1.3, §4.4), and UpdateContainers under containerd's NRI lock (§6.3)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING

from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.proto import ttrpc_pb2

if TYPE_CHECKING:
    from tests.support.nri_runtime.connection import PluginConnection

RUNTIME = "nri.pkg.api.v1alpha1.Runtime"
_NAME = re.compile(r"[a-zA-Z0-9_.+-]+")
_INDEX = re.compile(r"[0-9][0-9]")


async def serve(conn: PluginConnection, stream: int, request: ttrpc_pb2.Request) -> None:
    """Answer one request the plugin sent on conn 2."""
    rt = conn.runtime
    if request.service != RUNTIME:
        await conn.reply(stream, code=12, message=f"service {request.service}")
    elif request.method == "RegisterPlugin":
        await _register(conn, stream, pb.RegisterPluginRequest.FromString(request.payload))
    elif request.method == "UpdateContainers":
        update = pb.UpdateContainersRequest.FromString(request.payload)
        rt.update_times.append(time.monotonic())
        if rt.deadlock_on_update:
            rt.deadlocked = True  # the two locks wait on each other: no answer, ever
            rt.update_requests.append(update)
            rt.update_arrived.set()
            return
        async with rt.nri_lock:  # containerd's NRI lock (§6.3)
            rt.update_requests.append(update)
            rt.update_arrived.set()
            error = rt.update_error
            if rt.update_seconds:  # runc updates each container under the lock
                await asyncio.sleep(rt.update_seconds * len(update.update))
        if error is None:
            await conn.reply(stream, pb.UpdateContainersResponse().SerializeToString())
        else:  # the reply object is dropped: status only (§6.3)
            await conn.reply(stream, code=error[0], message=error[1])
    else:
        await conn.reply(stream, code=12, message=f"method {request.method}")


async def _register(conn: PluginConnection, stream: int, req: pb.RegisterPluginRequest) -> None:
    conn.register_calls += 1
    if conn.runtime.deadlocked:
        return  # registration waits for the adaptation lock the stuck call holds
    if conn.register_calls > 1:  # the runtime blocks in a 1-slot channel (§1.3)
        conn.runtime.violations.append("second RegisterPlugin on one connection")
        return
    error = ""
    if not conn.preinstalled:
        if not _INDEX.fullmatch(req.plugin_idx):
            error = f"invalid plugin index {req.plugin_idx!r}"
        elif not req.plugin_name or (conn.profile.checks_name
                                     and not _NAME.fullmatch(req.plugin_name)):
            error = f"invalid plugin name {req.plugin_name!r}"
    if conn.runtime.refuse_registration is not None:
        error = conn.runtime.refuse_registration
    if error:
        await conn.reply(stream, code=2, message=f"failed to register plugin: {error}")
        conn.close(error)
        return
    conn.name, conn.index = req.plugin_name, req.plugin_idx
    conn.registered.set()  # signalled before the reply is sent (§4.4)
    conn.notify()
    if conn.runtime.configure_before_register_reply:
        await conn.configured.wait()
    await conn.reply(stream)

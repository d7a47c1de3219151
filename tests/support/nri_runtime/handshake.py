"""What containerd does once a plugin registered: Configure, then Synchronize with the pods and
containers it has, in chunks where the version chunks (§4.5, §4.6); then events may flow."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from cpuset_adapters.nri.proto import nri_pb2 as pb
from tests.support.nri_runtime.errors import CallError, PluginGone
from tests.support.nri_runtime.framing import TTRPC_MAX

if TYPE_CHECKING:
    from tests.support.nri_runtime.connection import PluginConnection


async def handshake(conn: PluginConnection) -> None:
    """Once the plugin registered: Configure, then Synchronize (which pre-installed plugins get
    only from versions that sync them); the connection is then ready, or closed on a failure."""
    rt = conn.runtime
    try:
        await asyncio.wait_for(conn.registered.wait(), rt.registration_timeout)
    except TimeoutError:
        conn.close("registration timeout")
        return
    try:
        await _configure(conn)
        if not conn.preinstalled or conn.profile.syncs_preinstalled:
            await _synchronize(conn)
    except TimeoutError:
        # v0.6.1 logs "failed to synchronize plugin" and never adds it: open, and silent.
        conn.left_out = "Synchronize timed out"
        conn.notify()
        return
    except (PluginGone, CallError) as exc:
        conn.close(f"handshake failed: {exc}")
        return
    conn.ready.set()
    conn.notify()


async def _configure(conn: PluginConnection) -> None:
    rt, prof = conn.runtime, conn.profile
    req = pb.ConfigureRequest(config=rt.config, runtime_name="containerd",
                              runtime_version=rt.runtime_version or prof.runtime_version)
    if prof.sends_timeouts:
        req.registration_timeout = int(rt.registration_timeout * 1000)
        req.request_timeout = int(rt.request_timeout * 1000)
    if prof.sends_nri_version:
        req.NRI_version = "v" + prof.nri
    try:
        resp = await conn.call("Configure", req.SerializeToString(),
                               metadata=rt.metadata)
    finally:
        conn.configured.set()
    if resp.status.code:
        raise CallError(resp.status.code, resp.status.message)
    events = pb.ConfigureResponse.FromString(resp.payload).events
    if events == 0:
        events = prof.valid_events  # 0 means every valid event (§4.5)
    if events & ~prof.valid_events:
        raise CallError(2, f"invalid plugin events: 0x{events:x}")
    conn.events = events


def _sync_chunks(conn: PluginConnection) -> list[tuple[list[pb.PodSandbox], list[pb.Container]]]:
    rt = conn.runtime
    pods, ctrs = list(rt.pods), list(rt.containers)
    size = rt.sync_chunk if conn.profile.chunks_sync else None
    whole = pb.SynchronizeRequest(pods=pods, containers=ctrs).ByteSize()
    if size is None and conn.profile.chunks_sync and whole > TTRPC_MAX - 200:
        count = max(len(pods), len(ctrs))  # recalcObjsPerSyncMsg, roughly (§4.6)
        size = max(8, int(count * min(0.9, (TTRPC_MAX - 200) / whole)))
    if size is None:
        return [(pods, ctrs)]
    return [(pods[i:i + size], ctrs[i:i + size])
            for i in range(0, max(len(pods), len(ctrs), 1), size)]


async def _synchronize(conn: PluginConnection) -> None:
    rt = conn.runtime
    deadline = asyncio.get_running_loop().time() + rt.request_timeout  # one for all chunks
    chunks = _sync_chunks(conn)
    async with rt.nri_lock:
        for i, (pods, ctrs) in enumerate(chunks):
            more = i < len(chunks) - 1
            req = pb.SynchronizeRequest(pods=pods, containers=ctrs, more=more)
            resp = await conn.call("Synchronize", req.SerializeToString(), deadline=deadline,
                                   metadata=rt.metadata,
                                   close_on_timeout=not conn.profile.keeps_unsynced)
            conn.sync_chunks += 1
            if resp.status.code:
                raise CallError(resp.status.code, resp.status.message)
            reply = pb.SynchronizeResponse.FromString(resp.payload)
            if more and (not reply.more or len(reply.update)):
                rt.violations.append("plugin does not handle split sync requests")
                raise CallError(2, "plugin does not handle split sync requests")
            if not more:
                conn.sync_updates = list(reply.update)

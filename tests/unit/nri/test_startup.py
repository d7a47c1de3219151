"""A pre-installed plugin must register within the runtime's registration timeout of a cold
exec (5 s by default, on small nodes): the session's import path stays light (no grpc) and a
launched process registers well under a second."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from tests.support.nri_runtime import RuntimeDouble

SRC = Path(__file__).resolve().parents[3] / "src"

PLUGIN = """
import asyncio, os
from cpuset_adapters.nri.handler_port import Event
from cpuset_adapters.nri.session import NriSession, launch_from_environ

class Handler:
    def subscribed_events(self): return frozenset({Event.CREATE_CONTAINER})
    def on_configure(self, info): pass
    def on_synchronize(self, pods, containers): return []
    def on_create_container(self, pod, container): return None, []
    def on_update_container(self, pod, container, resources): return []
    def on_stop_container(self, pod, container): return []
    def on_remove_container(self, pod, container): pass
    def on_disconnect(self): pass

launch = launch_from_environ(os.environ, name="unused", index="99")
session = NriSession(Handler(), name=launch.name, index=launch.index)
asyncio.run(session.run_forever(launch.endpoint))
"""


def test_the_session_import_path_has_no_grpc() -> None:
    probe = ("import sys, cpuset_adapters.nri.session; "
             "sys.exit(any(m.split('.')[0] == 'grpc' for m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], env={"PYTHONPATH": str(SRC)},
                            check=False, timeout=30)
    assert result.returncode == 0


def test_a_launched_plugin_registers_in_the_runtimes_time_and_exits_with_its_socket() -> None:
    # The bound is containerd's registration timeout (5 s by default), which the runtime
    # enforces; how fast it registers is a speed figure: bench/nri_latency.py's cold start.
    async def main() -> None:
        async with RuntimeDouble(version="0.6.1", preinstalled=True) as rt:
            assert rt.plugin_socket is not None
            fd = rt.plugin_socket.fileno()
            # The runtime's environment is exactly these three (§1.2), plus the path to our
            # sources that a launcher wrapper provides; the fd number is passed through as-is.
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-c", PLUGIN, pass_fds=(fd,),
                env={"NRI_PLUGIN_NAME": "cpuset", "NRI_PLUGIN_IDX": "10",
                     "NRI_PLUGIN_SOCKET": str(fd), "PYTHONPATH": str(SRC)})
            rt.plugin_socket.close()
            try:
                conn = await rt.wait_registered(timeout=5.0)
                assert (conn.name, conn.index) == ("cpuset", "10")
                await rt.wait_ready(timeout=5.0)
                await rt.disconnect()
                assert await asyncio.wait_for(child.wait(), 5.0) == 0
            finally:
                if child.returncode is None:
                    child.kill()
                    await child.wait()

    asyncio.run(main())

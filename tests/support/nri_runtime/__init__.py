"""An in-process NRI runtime double: containerd's side of the NRI socket, written from the
protocol fact sheet (shared/notes/nri-protocol.md), not from the plugin code it tests.

It shares only the generated protobuf schema with the plugin; framing, the mux and ttrpc are
its own. Its *receiver* behaves like the Go runtime's: each mux frame is one datagram read
through ttrpc's 4096-byte ``bufio.Reader``, so a frame the Go side could not read (§2.4: larger
than the buffer it is read into) kills the connection here too and is recorded in
:attr:`RuntimeDouble.violations`, as are even or reused stream ids, a second RegisterPlugin and
a mishandled split Synchronize.

Usage::

    async with RuntimeDouble(tmp_path / "nri.sock", version="0.6.1") as rt:
        ...start the plugin against rt.socket_path...
        await rt.wait_ready()                     # registered, configured, synchronized
        resp = await rt.create_container(pod, ctr)

Versions (§0, §7): ``"0.6.1"`` is containerd 1.7.16-1.7.25 (no timeouts or NRI version in
Configure, mask up to 0x7FF, no chunking, StateChange for every other event, pre-installed
plugins never synchronized, sends messages over 4 MiB); ``"0.8.0"`` is containerd 1.7.26+ and
2.0-2.1 (timeouts, chunking, still StateChange); ``"0.12.2"`` is containerd 2.3+/HEAD (NRI
version, mask up to 0x3FFF, per-event RPCs with the code-12 fallback to StateChange, name
check). Pass ``preinstalled=True`` to hand the plugin a socketpair end (``plugin_socket``)
instead of listening.
"""

from tests.support.nri_runtime.connection import PluginConnection
from tests.support.nri_runtime.double import HANG_GUARD, RuntimeDouble
from tests.support.nri_runtime.errors import CallError, PluginGone
from tests.support.nri_runtime.versions import PROFILES, Profile

__all__ = ["HANG_GUARD", "PROFILES", "CallError", "PluginConnection", "PluginGone", "Profile",
           "RuntimeDouble"]

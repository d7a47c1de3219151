"""What a running irqbalance must be told while CPUs are quiet (issue 43): the CPUs it keeps
interrupts off by itself, and the one message that adds the quiet CPUs to them or gives them
back. Pure: the caller reads irqbalance's environment and the kernel's files and sends the
message (``cpuset_adapters.quiet.irqbalance``).

irqbalance 1.9.2 (``cputree.c: setup_banned_cpus``) bans, at every topology rescan, the first
of: the CPUs a client sent on its socket (``settings cpus <cpulist>``; only the first word is
read, as a CPU list, although its man page shows numbers apart); ``IRQBALANCE_BANNED_CPUS``
(a hex mask, deprecated); ``IRQBALANCE_BANNED_CPULIST``; else the kernel's isolated and
``nohz_full`` CPUs. ``settings cpus NULL`` forgets what a client sent, so it falls back to its
own set: that is how it is given back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from cpuset_core.cpuset import CPUSet

GIVE_BACK: Final = "settings cpus NULL"
"""The message that returns irqbalance to the CPUs it bans by itself."""


def own_banned(environ: Mapping[str, str], isolated: CPUSet, nohz_full: CPUSet) -> CPUSet:
    """The CPUs an irqbalance started with ``environ`` bans by itself, as it decides it.
    Raises ValueError for a variable it could not have parsed either."""
    mask = environ.get("IRQBALANCE_BANNED_CPUS", "").strip()
    if mask:
        return CPUSet.from_mask(int(mask.replace(",", ""), 16))
    listed = environ.get("IRQBALANCE_BANNED_CPULIST", "").strip()
    if listed:
        return CPUSet.parse(listed)
    return isolated | nohz_full


def ban_message(own: CPUSet, quiet: CPUSet) -> str:
    """The message that keeps irqbalance off ``quiet`` and off its ``own`` CPUs: every old
    value it was sent is forgotten, so the whole set goes each time. With nothing quiet, the
    message that gives it its own set back."""
    if not quiet:
        return GIVE_BACK
    return f"settings cpus {(own | quiet).format()}"

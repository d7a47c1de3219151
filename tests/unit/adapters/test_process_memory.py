"""Giving memory back: on glibc both calls reach the C library (elsewhere they say they
cannot); neither may disturb the process."""

from __future__ import annotations

import platform

from cpuset_adapters.process_memory import limit_heaps, release_free_memory


def test_memory_is_trimmed_and_heaps_limited_where_the_c_library_can() -> None:
    on_glibc = platform.libc_ver()[0] == "glibc"
    data = [bytes(200_000) for _ in range(50)]  # large blocks, freed below
    del data
    assert release_free_memory() is on_glibc
    assert limit_heaps(8) is on_glibc  # glibc's own default on this machine's scale

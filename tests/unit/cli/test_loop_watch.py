"""The loop watch: a loop blocked past the limit is logged once with where it stands and
counted; its turning again is told; a loop that turns is never reported."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from cpuset_cli.daemon.loop_watch import LoopWatch

PATIENCE = 30.0
"""Hang guard of these tests: nothing here waits on a clock except to give up."""


def blocking_write_to_a_cgroup(noticed: threading.Event) -> None:
    """Stands in for a call the kernel holds: returns once the watch has noticed."""
    assert noticed.wait(PATIENCE), "the watch never noticed the blocked loop"


def test_a_blocked_loop_is_logged_with_where_it_stands_counted_and_told_when_it_turns(
        caplog: pytest.LogCaptureFixture) -> None:
    noticed = threading.Event()
    stalls: list[None] = []

    def on_stall() -> None:
        stalls.append(None)
        noticed.set()

    async def scenario() -> None:
        watch = asyncio.create_task(LoopWatch(on_stall, stall_after=0.2, tick=0.02).run())
        await asyncio.sleep(0.1)
        blocking_write_to_a_cgroup(noticed)  # blocks the loop until the watch has seen it
        deadline = time.monotonic() + PATIENCE
        while "turned again" not in caplog.text and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        watch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await watch

    with caplog.at_level(logging.WARNING, logger="nri_cpuset.daemon"):
        asyncio.run(scenario())
    assert len(stalls) == 1
    stalled = [r.getMessage() for r in caplog.records if "has not turned" in r.getMessage()]
    assert len(stalled) == 1
    assert "blocking_write_to_a_cgroup" in stalled[0]
    assert "noticed.wait" in stalled[0]
    assert "the event loop turned again after standing for" in caplog.text


def test_a_loop_that_turns_is_never_reported() -> None:
    now = [100.0]
    stalls: list[None] = []
    watch = LoopWatch(lambda: stalls.append(None), stall_after=5.0, clock=lambda: now[0])
    for _ in range(20):
        watch.tick()
        now[0] += 4.9
        watch.look()
    assert stalls == []
    now[0] += 5.0
    watch.look()
    watch.look()  # one stall, one report
    assert len(stalls) == 1

"""A runtime whose NRI deadlocked on an UpdateContainers call of the plugin's own (NRI before
v0.12.1, decision 51): the plugin drops the call, reconnects, and once the runtime has left
its registrations unanswered a few times it says plainly, once, what an operator must do."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import pytest

from cpuset_adapters.nri.deadlock import WEDGED_AFTER
from cpuset_adapters.nri.launch import SocketPath
from cpuset_adapters.nri.session import NriSession
from cpuset_core import ContainerUpdate, CPUSet, Kind
from tests.support.nri_runtime import HANG_GUARD, RuntimeDouble
from tests.unit.nri.session_harness import RecordingHandler, run, sock_path

WEDGED = "its NRI is most likely deadlocked"


def shrink() -> ContainerUpdate:
    return ContainerUpdate(container_id="id-app-0123456789", subject="default/web/app",
                           kind=Kind.SHARED, cpus=CPUSet.parse("0-1"),
                           previous_cpus=CPUSet.parse("0-3"))


def serve_until(tmp_path: Path, *, deadlock: bool, registrations: int,
                caplog: pytest.LogCaptureFixture) -> RuntimeDouble:
    """Register, make one UpdateContainers call that the runtime does not answer (deadlocked
    or merely slow), then let the plugin try ``registrations`` more times."""
    caplog.set_level(logging.INFO, logger="nri_cpuset.nri")
    path = sock_path(tmp_path)
    # Each registration a deadlocked runtime leaves unanswered waits this out: short there;
    # where the runtime answers, a short one would call a loaded machine deadlocked.
    session = NriSession(RecordingHandler(), name="cpuset", index="50",
                         registration_timeout=0.1 if deadlock else HANG_GUARD)

    async def main() -> None:
        async with RuntimeDouble(path) as rt:
            task = asyncio.create_task(session.run_forever(
                SocketPath(str(path)), initial_backoff=0.01, max_backoff=0.02))
            try:
                await rt.wait_ready()
                if deadlock:
                    rt.deadlock_on_update = True
                else:  # slow, not stuck: the call times out, the runtime answers later
                    await rt.nri_lock.acquire()
                with pytest.raises(TimeoutError):
                    await session.apply_updates([shrink()], timeout=0.1)
                if not deadlock:
                    rt.nri_lock.release()
                while sum(c.register_calls for c in rt.connections) < registrations + 1:
                    await asyncio.sleep(0.02)
                await asyncio.sleep(0.05)
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            deadlocked.append(rt)

    deadlocked: list[RuntimeDouble] = []
    run(main())
    return deadlocked[0]


def test_registrations_left_unanswered_after_a_dropped_call_are_called_a_deadlock_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    serve_until(tmp_path, deadlock=True, registrations=WEDGED_AFTER + 3, caplog=caplog)
    said = [r for r in caplog.records if WEDGED in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]
    assert said[0].levelno == logging.ERROR
    assert "containerd#13733" in said[0].getMessage()
    assert "systemctl restart containerd" in said[0].getMessage()
    unanswered = [r for r in caplog.records if "no RegisterPlugin reply" in r.getMessage()]
    assert len(unanswered) >= WEDGED_AFTER


def test_a_call_that_was_only_slow_is_followed_by_a_registration_and_no_such_error(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rt = serve_until(tmp_path, deadlock=False, registrations=1, caplog=caplog)
    assert not rt.deadlocked
    assert not [r for r in caplog.records if WEDGED in r.getMessage()]
    assert sum(c.registered.is_set() for c in rt.connections) >= 2

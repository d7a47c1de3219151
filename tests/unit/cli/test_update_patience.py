"""How long the plugin's own UpdateContainers call may go unanswered on a runtime whose locks
can deadlock: a floor for small batches, the healthy pace for big ones, and learnt from what
the runtime did, so a node whose runc takes seconds is not dropped call after call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pytest

from cpuset_adapters.nri.session import UpdateContainersError
from cpuset_cli.daemon import update_patience
from cpuset_cli.daemon.update_patience import UpdatePatience, send_patiently
from cpuset_core import ContainerUpdate, CPUSet, Kind


def test_before_anything_is_learnt_a_batch_gets_the_floor_or_the_healthy_pace() -> None:
    patience = UpdatePatience()
    assert patience.bound(1) == update_patience.FLOOR
    assert patience.bound(40) == update_patience.FLOOR
    assert patience.bound(100) == pytest.approx(100 * update_patience.SECONDS_PER_UPDATE)
    assert patience.bound(10_000) == update_patience.CEILING


def test_a_call_given_up_on_doubles_the_next_bound_up_to_the_most_patience() -> None:
    patience = UpdatePatience()
    bounds = []
    for _ in range(6):
        patience.given_up()
        bounds.append(patience.bound(1))
    floor = update_patience.FLOOR
    assert bounds == [2 * floor, 4 * floor, 8 * floor, 8 * floor, 8 * floor, 8 * floor]


def test_a_slow_runtime_is_learnt_from_its_answers_and_forgotten_gradually() -> None:
    patience = UpdatePatience()
    patience.given_up()  # 2 s for one container: runc took 3 s
    patience.answered(1, 3.0)  # answered within the stretched 4 s
    assert patience.stretch == 1.0
    assert patience.bound(1) == pytest.approx(update_patience.MARGIN * 3.0)
    assert patience.bound(2) == pytest.approx(2 * update_patience.MARGIN * 3.0)
    for _ in range(200):  # a long healthy spell afterwards
        patience.answered(10, 0.1)
    assert patience.bound(1) == update_patience.FLOOR


def test_answers_halve_the_stretch_but_never_below_one() -> None:
    patience = UpdatePatience()
    for _ in range(3):
        patience.given_up()
    patience.answered(1, 0.01)
    assert patience.stretch == 4.0
    for _ in range(5):
        patience.answered(1, 0.01)
    assert patience.stretch == 1.0


class Runtime:
    """A session whose UpdateContainers takes ``seconds``, or raises ``error``."""

    def __init__(self, *, seconds: float = 0.0, error: Exception | None = None) -> None:
        self.seconds = seconds
        self.error = error
        self.timeouts: list[float | None] = []

    async def apply_updates(self, updates: Sequence[ContainerUpdate], *,
                            timeout: float | None = None) -> None:
        self.timeouts.append(timeout)
        if self.error is not None:
            raise self.error
        await asyncio.sleep(self.seconds)


UPDATES = [ContainerUpdate(container_id=f"c{i}", subject=f"default/p{i}/app", kind=Kind.SHARED,
                           cpus=CPUSet.parse("1-3"), previous_cpus=CPUSet.parse("0-3"))
           for i in range(3)]


def send(runtime: Runtime, patience: UpdatePatience) -> None:
    asyncio.run(send_patiently(runtime, UPDATES, patience))  # type: ignore[arg-type]


def test_an_unanswered_call_is_given_up_on_and_says_how_long_the_next_may_take(
        caplog: pytest.LogCaptureFixture) -> None:
    patience = UpdatePatience()
    runtime = Runtime(error=TimeoutError())
    with caplog.at_level(logging.WARNING), pytest.raises(TimeoutError):
        send(runtime, patience)
    assert runtime.timeouts == [update_patience.FLOOR]
    assert patience.stretch == 2.0
    assert "may go unanswered for 4.0 s (3 containers)" in caplog.text


def test_an_answer_teaches_the_pace_even_when_the_runtime_refused_the_updates() -> None:
    patience = UpdatePatience()
    send(Runtime(seconds=0.03), patience)
    assert patience.pace >= 0.01
    refused = Runtime(seconds=0.0, error=UpdateContainersError("no such container", 2))
    patience.given_up()
    with pytest.raises(UpdateContainersError):
        send(refused, patience)
    assert patience.stretch == 1.0


"""The VM lab's tests: they run only inside a guest booted by ``python -m cpuset_lab.vm``
(``scripts/vm-test``, ``nox -s vm``), which sets ``NRI_CPUSET_VM_GUEST=1``. Anywhere else
they are not even collected, so ``pytest tests`` and the e2e runs never meet them.

In a guest, one containerd and one plugin serve the whole session (``guest``); each test runs
its pods through ``pods`` and gets them removed afterwards. A skipped test is reported as a
failure: in the lab a skip means something was not checked that the shape is there to check.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.vm.runtime import Guest, Pods

GUEST = os.environ.get("NRI_CPUSET_VM_GUEST") == "1"

if not GUEST:
    collect_ignore_glob = ["test_*.py"]


@dataclass(frozen=True, slots=True)
class ShapeFacts:
    """What the host says this guest is (``shape.json``, from ``cpuset_lab.vm_shapes``)."""

    raw: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if GUEST and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in the VM lab, which counts as a failure: {report.longrepr}"
    guest = getattr(item, "funcargs", {}).get("guest")
    if GUEST and report.failed and guest is not None and _diagnosed < MAX_DIAGNOSED:
        from tests.vm import diagnostics

        _count_diagnosed()
        diagnostics.collect(guest, f"{item.nodeid} ({report.when})")


def _guarded_phase(item: pytest.Item, when: str) -> Iterator[None]:
    if not GUEST:
        yield
        return
    from tests.vm.hang_guard import guarded
    from tests.vm.runtime import RESULTS

    with guarded(f"{item.nodeid} ({when})", RESULTS):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield from _guarded_phase(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from _guarded_phase(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield from _guarded_phase(item, "teardown")


MAX_DIAGNOSED = 3
"""How many failures get their diagnostics (each takes seconds under emulation)."""
_diagnosed = 0


def _count_diagnosed() -> None:
    global _diagnosed  # noqa: PLW0603 - one count per pytest session
    _diagnosed += 1


@pytest.fixture(scope="session")
def shape() -> ShapeFacts:
    from tests.vm.runtime import RESULTS

    return ShapeFacts(json.loads((RESULTS / "shape.json").read_text()))


@pytest.fixture(scope="session")
def guest() -> Iterator[Guest]:
    """containerd with NRI, ``nri-cpuset run`` and the shared ``web/app`` container, once."""
    from tests.vm.runtime import Guest

    if os.geteuid() != 0:
        pytest.fail("the VM lab runs containerd and needs root", pytrace=False)
    started = Guest.start()
    print(f"\nguest runtime up (seconds since the fixture began): {started.started}")
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def pods(guest: Guest) -> Iterator[Pods]:
    """This test's pods; removed afterwards, when the plugin must hold only ``web/app``."""
    from tests.vm.runtime import Pods

    mine = Pods(guest)
    try:
        yield mine
    finally:
        mine.remove_all()

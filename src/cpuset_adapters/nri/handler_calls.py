"""One call of the :class:`~cpuset_adapters.nri.handler_port.NriHandler` as the Plugin service
makes it: timed against the runtime's request timeout, and any failure turned into the status the
runtime gets (:class:`HandlerFailedError`).

A slow call is logged: a warning past :data:`SLOW_HANDLER_FRACTION` of the timeout, an error past
the whole timeout (the runtime has dropped the answer, and the plugin with it).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from cpuset_adapters.grpc_status import StatusCode
from cpuset_adapters.nri.handler_port import HandlerError

_logger = logging.getLogger("nri_cpuset.nri")

SLOW_HANDLER_FRACTION = 0.1
"""A handler call longer than this fraction of the runtime's request timeout is logged."""

_T = TypeVar("_T")


class HandlerFailedError(Exception):
    """A handler call failed: ``code`` and ``message`` are the error status for the runtime."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True, kw_only=True)
class HandlerTime:
    """One handler call's duration against the runtime's request timeout."""

    what: str
    """The handler method called (``on_create_container``)."""
    elapsed_ms: float
    budget_ms: int
    """The runtime's request timeout."""

    @property
    def percent(self) -> float:
        """The share of the request timeout the call took, in per cent."""
        return 100.0 * self.elapsed_ms / self.budget_ms

    @property
    def slow(self) -> bool:
        """Whether the call took more than :data:`SLOW_HANDLER_FRACTION` of the timeout."""
        return self.elapsed_ms > SLOW_HANDLER_FRACTION * self.budget_ms

    def if_slow(self) -> str:
        """`` (on_synchronize took 250.0 ms, 12 % of the runtime's 2000 ms request timeout)``
        for another line to say, when :attr:`slow`; ``""`` otherwise."""
        if not self.slow:
            return ""
        return (f" ({self.what} took {self.elapsed_ms:.1f} ms, {self.percent:.0f} % of the "
                f"runtime's {self.budget_ms} ms request timeout)")

    def log_if_slow(self) -> None:
        """Log the call if it was :attr:`slow`."""
        if not self.slow:
            return
        late = self.elapsed_ms >= self.budget_ms
        _logger.log(logging.ERROR if late else logging.WARNING,
                    "slow handler: %s took %.1f ms, %.0f %% of the runtime's %d ms "
                    "request timeout%s", self.what, self.elapsed_ms, self.percent,
                    self.budget_ms, " (the runtime drops the plugin)" if late else "")


@contextlib.contextmanager
def timed(what: str, budget_ms: int,
          report: Callable[[HandlerTime], None] = HandlerTime.log_if_slow) -> Iterator[None]:
    """Time the block, even when it raises, and hand its :class:`HandlerTime` to ``report``
    (by default: logged if slow)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        report(HandlerTime(what=what, elapsed_ms=(time.perf_counter() - start) * 1000.0,
                           budget_ms=budget_ms))


def invoke(what: str, budget_ms: int, call: Callable[[], _T],
           report: Callable[[HandlerTime], None] = HandlerTime.log_if_slow) -> _T:
    """``call()``'s result, timed (its time goes to ``report``: by default, logged if slow).
    Raises :class:`HandlerFailedError`: UNKNOWN with its message for a :class:`HandlerError`
    (like a Go plugin's error), INTERNAL for anything else, logged with its traceback."""
    with timed(what, budget_ms, report):
        try:
            return call()
        except HandlerError as exc:
            raise HandlerFailedError(StatusCode.UNKNOWN, exc.message) from exc
        except Exception as exc:
            _logger.exception("handler %s raised", what)
            raise HandlerFailedError(
                StatusCode.INTERNAL, f"nri-cpuset {what}: internal error: {exc!r}") from exc

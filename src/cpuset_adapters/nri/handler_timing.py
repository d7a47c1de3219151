"""How long one handler call took against the runtime's request timeout, and the line a slow
call logs: a warning past :data:`SLOW_HANDLER_FRACTION` of the timeout, an error past the whole
timeout (the runtime has dropped the answer, and the plugin with it)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_logger = logging.getLogger("nri_cpuset.nri")

SLOW_HANDLER_FRACTION = 0.1
"""A handler call longer than this fraction of the runtime's request timeout is logged."""


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

    def log_if_slow(self) -> None:
        """Log the call if it took more than :data:`SLOW_HANDLER_FRACTION` of the timeout."""
        if self.elapsed_ms <= SLOW_HANDLER_FRACTION * self.budget_ms:
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

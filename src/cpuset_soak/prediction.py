"""What the plugin may answer a creation, as the soak's model predicts it: the refusal reasons it
knows (the plugin's typed errors' ``reason``) and a :class:`Prediction` of the outcomes allowed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

INVALID_ANNOTATION: Final = "invalid-annotation"
NAMESPACE: Final = "pin-namespace-not-allowed"
UNAVAILABLE: Final = "cpu-unavailable"
INSUFFICIENT: Final = "insufficient-cpus"
REASSIGNMENT: Final = "insufficient-cpus-for-reassignment"
POOL_EMPTY: Final = "shared-pool-exhausted"


@dataclass(frozen=True, slots=True)
class Prediction:
    """What the plugin may answer: ``must_admit``; else refusals with one of ``reasons``, and
    an admission too when ``may_admit``."""

    may_admit: bool
    must_admit: bool
    reasons: frozenset[str] = frozenset()

    def allows(self, reason: str | None) -> bool:
        """Whether an outcome (None: admitted, else the refusal's reason) is allowed."""
        if reason is None:
            return self.may_admit
        return not self.must_admit and reason in self.reasons

    def either(self, other: Prediction) -> Prediction:
        """What is allowed when the node may be as this prediction saw it, or as ``other``."""
        return Prediction(may_admit=self.may_admit or other.may_admit,
                          must_admit=self.must_admit and other.must_admit,
                          reasons=self.reasons | other.reasons)


ADMIT: Final = Prediction(may_admit=True, must_admit=True)


def refuse(*reasons: str) -> Prediction:
    return Prediction(may_admit=False, must_admit=False, reasons=frozenset(reasons))


def maybe(reason: str) -> Prediction:
    return Prediction(may_admit=True, must_admit=False, reasons=frozenset([reason]))

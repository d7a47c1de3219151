"""Kubernetes quantities (``resource.Quantity``): ``"500m"``, ``"1Gi"``, ``2``, ``0.5`` as exact
values, and the kubelet's rounding to millicores and bytes."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Final

from cpuset_cli.pod_fields import describe

_QUANTITY: Final = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?")
_SUFFIXES: Final[Mapping[str, Fraction]] = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 10**3),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
_MAX_EXPONENT: Final = 30
_MAX_QUANTITY: Final = Fraction(2**63 - 1)
"""The kubelet holds quantities in an int64."""


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """Return the exact value of a Kubernetes quantity (``"500m"``, ``"1Gi"``, ``2``, ``0.5``).

    Raises :class:`QuantityError` for anything else, negative values included.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(f"expected a quantity like \"500m\", \"2\" or \"1Gi\", got "
                            f"{describe(value)}")
    text = value if isinstance(value, str) else repr(value)
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError(f"{json.dumps(text)} is not a quantity (like \"500m\", \"2\", "
                            f"\"1.5\" or \"1Gi\")")
    number = Fraction(match["number"])
    if match["suffix"]:
        number *= _SUFFIXES[match["suffix"]]
    elif match["exponent"]:
        exponent = int(match["exponent"])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"{json.dumps(text)}: exponent {exponent} is out of range")
        number *= Fraction(10) ** exponent
    if number < 0:
        raise QuantityError(f"{json.dumps(text)} is negative")
    if number > _MAX_QUANTITY:
        raise QuantityError(f"{json.dumps(text)} is too large")
    return number


def cpu_millis(quantity: Fraction) -> int:
    """Millicores, rounded up like ``Quantity.MilliValue``."""
    return math.ceil(quantity * 1000)


def memory_bytes(quantity: Fraction) -> int:
    """Bytes, rounded up like ``Quantity.Value``."""
    return math.ceil(quantity)


def format_number(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


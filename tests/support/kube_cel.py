"""Evaluating a ValidatingAdmissionPolicy's CEL with cel-python, as the API server would.

cel-python implements standard CEL (its ``matches`` uses RE2, like the API server's Go regexp).
The few Kubernetes library functions the project's policies call are added here, each written
from its documented semantics (cel-go's extended strings library; Kubernetes' regex and list
libraries): code-point indices, errors where cel-go errs, RE2 leftmost-first matching.
:data:`FUNCTIONS` lists them; a policy calling anything else fails the policy's test.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import celpy
import re2
from celpy import celtypes


class CelError(Exception):
    """An expression failed to evaluate (the API server's failurePolicy then applies)."""


def _split(text: celtypes.StringType, separator: celtypes.StringType) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(p) for p in str(text).split(str(separator))])


def _substring(text: celtypes.StringType, start: celtypes.IntType,
               end: celtypes.IntType | None = None) -> celtypes.StringType:
    stop = len(text) if end is None else int(end)
    if not 0 <= int(start) <= stop <= len(text):
        raise CelError(f"substring({start}, {end}) out of range for {text!r}")
    return celtypes.StringType(str(text)[int(start):stop])


def _index_of(target: Any, item: Any) -> celtypes.IntType:
    if isinstance(target, str):
        return celtypes.IntType(str(target).find(str(item)))
    for n, element in enumerate(target):
        if element == item:
            return celtypes.IntType(n)
    return celtypes.IntType(-1)


def _replace(text: celtypes.StringType, old: celtypes.StringType,
             new: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType(str(text).replace(str(old), str(new)))


def _find(text: celtypes.StringType, pattern: celtypes.StringType) -> celtypes.StringType:
    found = re2.search(str(pattern), str(text))
    return celtypes.StringType(found.group(0) if found else "")


FUNCTIONS = {"split": _split, "substring": _substring, "indexOf": _index_of,
             "replace": _replace, "find": _find}
"""The Kubernetes CEL library functions provided, by name."""


@dataclass(frozen=True)
class Verdict:
    """What the policy said about one object."""

    matched: bool
    allowed: bool
    message: str | None


@functools.cache
def _program(expression: str) -> celpy.Runner:
    """Compiled once per expression (parsing is most of cel-python's time)."""
    env = celpy.Environment()
    return env.program(env.compile(expression), functions=FUNCTIONS)


def _evaluate(expression: str, activation: Mapping[str, Any], *, lazy: bool = False) -> Any:
    """The value of ``expression``; an error raises :class:`CelError`, or with ``lazy`` is
    returned as a value (a variable's error only counts where it is used, as in the API
    server, whose variables are evaluated on first use)."""
    program = _program(expression)
    try:
        result = program.evaluate(dict(activation))
    except (celpy.CELEvalError, CelError) as exc:
        result = exc if isinstance(exc, celpy.CELEvalError) else celpy.CELEvalError(str(exc))
    if isinstance(result, celpy.CELEvalError) and not lazy:
        raise CelError(f"{expression[:60]}...: {result}")
    return result


def evaluate_policy(policy: Mapping[str, Any], obj: Mapping[str, Any],
                    request: Mapping[str, Any] | None = None) -> Verdict:
    """Run ``policy``'s match conditions, variables, validations and message expressions on
    ``obj`` (the admitted object) and ``request`` (the admission request's fields). Raises
    :class:`CelError` when an expression fails."""
    spec = policy["spec"]
    activation: dict[str, Any] = {"object": celpy.json_to_cel(obj),
                                  "request": celpy.json_to_cel(dict(request or {}))}
    for condition in spec.get("matchConditions", []):
        if not _evaluate(condition["expression"], activation):
            return Verdict(matched=False, allowed=True, message=None)
    variables: dict[str, Any] = {}
    for variable in spec.get("variables", []):
        activation["variables"] = celtypes.MapType(variables)
        variables[celtypes.StringType(variable["name"])] = _evaluate(
            variable["expression"], activation, lazy=True)
    activation["variables"] = celtypes.MapType(variables)
    for validation in spec["validations"]:
        if not _evaluate(validation["expression"], activation):
            text = validation.get("messageExpression")
            message = str(_evaluate(text, activation)) if text else validation.get("message")
            return Verdict(matched=True, allowed=False, message=message)
    return Verdict(matched=True, allowed=True, message=None)


def called_functions(expressions: Sequence[str]) -> set[str]:
    """Every function called as a member (``x.f(...)``) or globally (``f(...)``)."""
    found: set[str] = set()
    for expression in expressions:
        found.update(m.group(1) for m in re2.finditer(r"([A-Za-z_][A-Za-z0-9_]*)\(",
                                                      expression))
    return found

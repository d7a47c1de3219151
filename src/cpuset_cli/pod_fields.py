"""Typed access to a pod manifest's fields, failing with a :class:`PodsInputError` that names the
file, the pod and the field."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence


class PodsInputError(ValueError):
    """A pods file the planner cannot read; the message names the file, pod and field."""

    def __init__(self, source: str, pod: str | None, field: str | None, problem: str) -> None:
        self.source = source
        self.pod = pod
        self.field = field
        self.problem = problem
        super().__init__(": ".join(p for p in (source, pod, field, problem) if p))



class Fields:
    """Typed access to one pod's fields, raising errors that name the pod and the field."""

    def __init__(self, source: str, label: str) -> None:
        self.source = source
        self.label = label

    def fail(self, field: str, problem: str) -> PodsInputError:
        return PodsInputError(self.source, self.label, field, problem)

    def mapping(self, value: object, field: str) -> Mapping[str, object]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(field, f"expected an object, got {describe(value)}")
        return value

    def sequence(self, value: object, field: str) -> Sequence[object]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(field, f"expected a list, got {describe(value)}")
        return value

    def string(self, value: object, field: str, *, required: bool = False) -> str | None:
        if value is None:
            if required:
                raise self.fail(field, "missing")
            return None
        if not isinstance(value, str):
            raise self.fail(field, f"expected a string, got {describe(value)}")
        if required and not value:
            raise self.fail(field, "is empty")
        return value



def describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value) if isinstance(value, (str, int, float, bool)) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


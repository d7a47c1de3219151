"""The topology file's schema: its shape as attrs classes, structured strictly with cattrs, and
cattrs' error trees as ``entry: problem`` lines (the format is described in ``topology_file``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeAlias, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn

# -- the file's shape --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CpuEntry:
    """One value of ``"cpus"``: where a logical CPU sits."""

    socket: int
    die: int = 0
    numa: int
    core: int
    l3: int | None = None


DistanceTable: TypeAlias = dict[str, dict[str, int]] | list[list[int]]
"""``numa_distances``: keyed by node id, or a square list of lists indexed by node id."""


@attrs.frozen(kw_only=True)
class TopologyFile:
    """The whole file, as JSON gives it (ids still strings, CPU lists still text)."""

    cpus: dict[str, CpuEntry]
    online: str | None = None
    isolated: str | None = None
    numa_distances: DistanceTable | None = None
    memory_nodes: list[int] | None = None


# -- structuring with cattrs -------------------------------------------------------------------


class WrongTypeError(TypeError):
    """A JSON value of the wrong type; the message says what was expected and what came."""


class DuplicateKeyError(ValueError):
    """A key that appears twice in one JSON object."""


def _describe(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _strict(expected: type, what: str) -> Callable[[object, object], Any]:
    """A structure hook that accepts only values of exactly ``expected`` (no ``int("3")``, no
    ``True`` as 1)."""

    def hook(value: object, _: object) -> Any:
        if type(value) is not expected:
            raise WrongTypeError(f"expected {what}, got {_describe(value)}")
        return value

    return hook


def _checked(expected: type, what: str,
             inner: Callable[[Any, Any], Any]) -> Callable[[object, object], Any]:
    """Wrap a generated hook so a JSON value of the wrong kind is a clear error rather than an
    ``AttributeError`` from deep inside cattrs (or a string iterated as a list)."""

    def hook(value: object, type_: object) -> Any:
        if not isinstance(value, expected):
            raise WrongTypeError(f"expected {what}, got {_describe(value)}")
        return inner(value, type_)

    return hook


def _structure_distances(value: object, _: object) -> DistanceTable | None:
    if value is None:
        return None
    if isinstance(value, dict):
        by_node: dict[str, dict[str, int]] = CONVERTER.structure(value, dict[str, dict[str, int]])
        return by_node
    if isinstance(value, list):
        rows: list[list[int]] = CONVERTER.structure(value, list[list[int]])
        return rows
    raise WrongTypeError(f"expected an object or a list of lists, got {_describe(value)}")


def _origin(type_: Any) -> object:
    origin: object = get_origin(type_)
    return origin


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(int, _strict(int, "an integer"))
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook_func(lambda t: t in (DistanceTable, DistanceTable | None),
                                           _structure_distances)
    converter.register_structure_hook_factory(
        attrs.has, lambda t: _checked(dict, "an object", make_dict_structure_fn(t, converter)))
    converter.register_structure_hook_factory(
        lambda t: _origin(t) is dict,
        lambda t: _checked(dict, "an object", mapping_structure_factory(t, converter)))
    converter.register_structure_hook_factory(
        lambda t: _origin(t) is list,
        lambda t: _checked(list, "a list", list_structure_factory(t, converter)))
    return converter


CONVERTER: Final = _make_converter()


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(f"key {json.dumps(key)} appears twice in one object")
        result[key] = value
    return result


# -- cattrs errors as "entry: problem" lines ----------------------------------------------------

_Segment: TypeAlias = tuple[str, "str | int"]
"""``("attr", name)``, ``("key", key)`` or ``("index", n)``."""


def _path(segments: Sequence[_Segment]) -> str:
    text = ""
    for kind, name in segments:
        if kind == "attr":
            text += f".{name}" if text else str(name)
        elif kind == "key":
            text += f"[{json.dumps(name)}]"
        else:
            text += f"[{name}]"
    return text


def schema_problems(exc: BaseException, at: tuple[_Segment, ...]) -> Iterator[tuple[str, str]]:
    """Yield ``(entry, problem)`` for every leaf of a cattrs validation error tree."""
    if isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, attr_note in with_notes:
            yield from schema_problems(sub, (*at, ("attr", attr_note.name)))
        for sub in without:
            yield from schema_problems(sub, at)
    elif isinstance(exc, IterableValidationError):
        with_index, without = exc.group_exceptions()
        for sub, index_note in with_index:
            kind = "key" if isinstance(index_note.index, str) else "index"
            yield from schema_problems(sub, (*at, (kind, index_note.index)))
        for sub in without:
            yield from schema_problems(sub, at)
    elif isinstance(exc, ForbiddenExtraKeysError):
        known = ", ".join(f'"{f.name}"' for f in attrs.fields(exc.cl))
        for key in sorted(exc.extra_fields):
            yield _path(at), f"unknown key {json.dumps(key)} (known: {known})"
    elif isinstance(exc, KeyError) and at and at[-1][0] == "attr":
        yield _path(at[:-1]), f'missing "{at[-1][1]}"'
    else:
        yield _path(at), str(exc)


def one_line(source: str, problems: Sequence[tuple[str, str]]) -> str:
    if not problems:  # not expected: cattrs always has a leaf; say something useful anyway
        return f"{source}: does not have the topology file's shape"
    entry, problem = problems[0]
    more = len(problems) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{source}: {entry}: {problem}{suffix}" if entry else f"{source}: {problem}{suffix}"


"""TOML text to a raw document, and a raw document to a typed :class:`Config` (cattrs).

Types are strict: ``true`` is not an integer, ``5`` is not a string, a string is not a list.
Every problem is collected (not only the first) and names its dotted key and the bad value.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeAlias

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn

from cpuset_adapters.config.errors import ConfigError, Problem
from cpuset_adapters.config.schema import Config, section_type

Document: TypeAlias = dict[str, Any]
"""A parsed TOML document (tables are dicts)."""


def parse_toml(text: str, source: str) -> Document:
    """Return the TOML document in ``text``; raise :class:`ConfigError` on a syntax error (the
    message carries tomllib's line and column)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, [Problem("", f"TOML syntax error: {exc}")]) from exc


def toml_value(value: object) -> str:
    """``value`` written back the way TOML spells it (for error messages)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def structure(document: Mapping[str, Any]) -> tuple[Config, list[Problem], set[str]]:
    """Return ``document`` as a :class:`Config`, the problems found (every unknown key and
    every value of the wrong type), and the tables that had problems: those take their
    defaults in the returned config, so the other tables can still be checked."""
    problems: list[Problem] = []
    failed: set[str] = set()
    known = [f.name for f in attrs.fields(Config)]
    problems.extend(Problem(key, _unknown(key, known, ()))
                    for key in document if key not in known)
    sections: dict[str, Any] = {}
    for field in attrs.fields(Config):
        if field.name not in document:
            continue
        try:
            sections[field.name] = _CONVERTER.structure(document[field.name],
                                                        section_type(field.name))
        except ClassValidationError as exc:
            problems.extend(_problems(exc, (field.name,), document))
            failed.add(field.name)
        except _WrongTypeError as exc:
            problems.append(Problem(field.name, str(exc), toml_value(document[field.name])))
            failed.add(field.name)
    return Config(**sections), problems, failed


# -- strict hooks ------------------------------------------------------------------------------


class _WrongTypeError(TypeError):
    """A value of the wrong TOML type; the message says what was expected."""


_KINDS: Final = {bool: "a boolean (true or false)", int: "an integer", str: "a string"}


def _strict(expected: type) -> Callable[[object, object], Any]:
    def hook(value: object, _: object) -> Any:
        # type() rather than isinstance: TOML's true must not pass as the integer 1.
        if type(value) is not expected:
            raise _WrongTypeError(f"expected {_KINDS[expected]}")
        return value

    return hook


def _string_list(value: object, _: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        # Iterating a string would give its characters: refuse instead.
        raise _WrongTypeError('expected a list of strings, e.g. ["kube-system", "team-*"]')
    return tuple(_CONVERTER.structure(value, list[str]))


def _table(cls: type) -> Callable[[object, object], Any]:
    inner: Callable[[Any, Any], Any] = make_dict_structure_fn(
        cls, _CONVERTER, _cattrs_forbid_extra_keys=True)

    def hook(value: object, type_: object) -> Any:
        if not isinstance(value, dict):
            raise _WrongTypeError("expected a table")
        return inner(value, type_)

    return hook


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for kind in _KINDS:
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook_func(lambda t: t == tuple[str, ...], _string_list)
    return converter


_CONVERTER: Final = _make_converter()
_CONVERTER.register_structure_hook_factory(attrs.has, _table)


# -- cattrs errors as problems -----------------------------------------------------------------

_Path: TypeAlias = tuple["str | int", ...]


def _dotted(path: _Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _lookup(document: Mapping[str, Any], path: _Path) -> object:
    value: object = document
    for part in path:
        if isinstance(part, int) and isinstance(value, list) and part < len(value):
            value = value[part]
            continue
        if not (isinstance(part, str) and isinstance(value, dict) and part in value):
            return None
        value = value[part]
    return value


def _problems(exc: BaseException, at: _Path, document: Mapping[str, Any]) -> Iterator[Problem]:
    """Yield a :class:`Problem` for every leaf of a cattrs validation error tree."""
    if isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        for sub, note in with_notes:
            yield from _problems(sub, (*at, note.name), document)
        for sub in without:
            yield from _problems(sub, at, document)
    elif isinstance(exc, IterableValidationError):
        with_index, without = exc.group_exceptions()
        for sub, index_note in with_index:
            yield from _problems(sub, (*at, index_note.index), document)
        for sub in without:
            yield from _problems(sub, at, document)
    elif isinstance(exc, ForbiddenExtraKeysError):
        known = [f.name for f in attrs.fields(exc.cl)]
        for key in sorted(exc.extra_fields):
            yield Problem(_dotted((*at, key)), _unknown(key, known, at))
    else:
        yield Problem(_dotted(at), str(exc), toml_value(_lookup(document, at)))


def _unknown(key: str, known: list[str], at: _Path) -> str:
    what = "table" if not at else "key"
    # Only a misspelt file needs suggestions: difflib would stay resident in the daemon.
    import difflib  # noqa: PLC0415

    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    where = f"in [{_dotted(at)}]" if at else "at the top level"
    return f"unknown {what} ({hint}known {what}s {where}: {', '.join(known)})"

"""Field selectors as the API server parses and matches them, for the lab's fake API server.

From apimachinery ``pkg/fields/selector.go`` (``ParseSelector``): terms are joined by unescaped
commas (an empty term is skipped); a term's operator is the first unescaped ``!=``, ``==`` or
``=`` (tried in that order at each position); in a value a backslash escapes ``\\``, ``,`` or
``=`` and nothing else. Every term must hold (``!=``: the field differs). A selector that does not
parse, or names a field the resource does not support, is refused: the API server answers 400
``BadRequest`` with the message of :class:`SelectorError`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

_OPERATORS = ("!=", "==", "=")
_ESCAPABLE = "\\,="


class SelectorError(ValueError):
    """A field selector the API server refuses (400 BadRequest)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Term:
    """One ``field <op> value`` of a selector."""

    field: str
    value: str
    negated: bool

    def holds(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.field, "") == self.value) != self.negated


def parse(text: str, supported: Collection[str]) -> tuple[Term, ...]:
    """The terms of ``text``; raises :class:`SelectorError` for a term that does not parse or a
    field not in ``supported``."""
    terms = tuple(_term(part) for part in _split_terms(text) if part)
    for term in terms:
        if term.field not in supported:
            raise SelectorError(f"field label not supported: {term.field}")
    return terms


def matches(terms: tuple[Term, ...], fields: Mapping[str, str]) -> bool:
    """Whether every term holds for ``fields`` (an empty selector matches everything)."""
    return all(term.holds(fields) for term in terms)


def _split_terms(text: str) -> list[str]:
    parts, start, escaped = [], 0, False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _term(part: str) -> Term:
    escaped = False
    for i, char in enumerate(part):
        if escaped:
            escaped = False
            continue
        if char == "\\":
            escaped = True
            continue
        for operator in _OPERATORS:
            if part.startswith(operator, i):
                return Term(field=part[:i], value=_unescape(part[i + len(operator):]),
                            negated=operator == "!=")
    raise SelectorError(f"invalid selector: '{part}'; can't understand '{part}'")


def _unescape(value: str) -> str:
    out, escaped = [], False
    for char in value:
        if escaped:
            if char not in _ESCAPABLE:
                raise SelectorError(f"invalid field selector value: invalid escape sequence "
                                    f"in {value!r}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(char)
    if escaped:
        raise SelectorError(f"invalid field selector value: unterminated escape sequence in "
                            f"{value!r}")
    return "".join(out)

"""How cpuset_core's public API is written as text (for public_api.py and its snapshot): one
line per fact of each export, its types and values written the same on every Python 3.11+.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Members a class may define in its body that are mechanics, not API.
_NOT_API = {"__init__", "__post_init__"}


def describe(module: types.ModuleType) -> list[str]:
    """Return the sorted lines that describe ``module``'s exports."""
    exported = {name: getattr(module, name) for name in module.__all__}
    namer = _Namer(exported)
    lines: list[str] = []
    for name, value in exported.items():
        lines.extend(_describe(name, value, namer))
    if hasattr(module, "__version__"):
        lines.append(f"__version__: {type(module.__version__).__name__}")
    return sorted(lines)


# -- what each kind of export shows ----------------------------------------------------------


def _describe(name: str, value: object, namer: _Namer) -> Iterator[str]:
    if isinstance(value, type):
        yield from _describe_class(name, value, namer)
    elif inspect.isfunction(value):
        yield f"{name}: function {_signature(value, namer, drop_first=False)}"
    else:
        yield f"{name}: constant {namer.type(type(value))} = {namer.value(value)}"


def _describe_class(name: str, cls: type, namer: _Namer) -> Iterator[str]:
    bases = ", ".join(namer.type(base) for base in cls.__bases__)
    yield f"{name}: {_class_kind(cls)}({bases})"
    constructor = _constructor(cls, namer)
    if constructor is not None:
        yield f"{name}: constructor {constructor}"
    if issubclass(cls, enum.Enum):
        for member_name, member in cls.__members__.items():
            yield f"{name}.{member_name}: member {namer.value(member.value)}"
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        for field in dataclasses.fields(cls):
            if not field.name.startswith("_"):
                yield f"{name}.{field.name}: field {namer.type(hints[field.name])}"
    for owner in _core_classes(cls):
        for attribute in _init_attributes(owner):
            yield f"{name}.{attribute}: attribute"
    yield from _members(name, cls, namer)


def _class_kind(cls: type) -> str:
    if not dataclasses.is_dataclass(cls):
        return "class"
    return "frozen dataclass" if cls.__dataclass_params__.frozen else "dataclass"


def _members(name: str, cls: type, namer: _Namer) -> Iterator[str]:
    """Methods, properties and class attributes, the core's own and those it inherits from
    its bases in the core (moving one to a base changes nothing for a caller)."""
    seen: set[str] = set()
    for owner in _core_classes(cls):
        for member_name, member in vars(owner).items():
            if member_name in seen or not _public_member(member_name, member) \
                    or isinstance(member, enum.Enum):  # members are listed above
                continue
            line = _member(member, namer)
            if line is not None:
                seen.add(member_name)
                yield f"{name}.{member_name}: {line}"


def _constructor(cls: type, namer: _Namer) -> str | None:
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        parameters = [
            inspect.Parameter(
                field.name,
                inspect.Parameter.KEYWORD_ONLY if field.kw_only
                else inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=_field_default(field), annotation=hints[field.name])
            for field in dataclasses.fields(cls) if field.init]
        return _format(inspect.Signature(parameters, return_annotation=None), namer)
    for owner in _core_classes(cls):
        init = vars(owner).get("__init__")
        if init is not None and _in_core(init):
            return _signature(init, namer, drop_first=True)
    return None  # inherited from outside the core (object, Exception): nothing of ours


def _field_default(field: dataclasses.Field[Any]) -> object:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return _Factory()
    return inspect.Parameter.empty


def _member(member: object, namer: _Namer) -> str | None:
    if isinstance(member, property):
        if member.fget is None or not _in_core(member.fget):
            return None
        returns = inspect.signature(member.fget, eval_str=True).return_annotation
        return f"property -> {namer.type(returns)}"
    if isinstance(member, classmethod | staticmethod) or inspect.isfunction(member):
        return _method(member, namer)
    if callable(member) or inspect.isdatadescriptor(member) or inspect.ismethoddescriptor(member):
        return None  # slots, generated helpers
    return f"class attribute = {namer.value(member)}"


def _method(member: object, namer: _Namer) -> str | None:
    kind = {classmethod: "classmethod", staticmethod: "staticmethod"}.get(type(member), "method")
    function = getattr(member, "__func__", member)
    if not _in_core(function):
        return None
    return f"{kind} {_signature(function, namer, drop_first=kind != 'staticmethod')}"


def _public_member(name: str, member: object) -> bool:
    """Public names, and dunder methods (operators, iteration) written in the core; not the
    dunder data every class or dataclass carries (``__doc__``, ``__slots__``, ...)."""
    if name in _NOT_API:
        return False
    if name.startswith("__") and name.endswith("__"):
        return inspect.isfunction(member)
    return not name.startswith("_")


def _core_classes(cls: type) -> list[type]:
    """``cls`` and its bases defined in cpuset_core, most derived first."""
    return [c for c in cls.__mro__ if c.__module__.split(".")[0] == "cpuset_core"]


def _in_core(function: Callable[..., object]) -> bool:
    """Whether the function was written in cpuset_core's source: not generated (``dataclasses``
    compiles methods from strings and wraps ``__repr__``) and not inherited from the standard
    library (``typing``, ``enum``): that is what differs between Python versions."""
    code = getattr(function, "__code__", None)
    if code is None or code.co_filename.startswith("<"):
        return False
    package = Path(sys.modules["cpuset_core"].__file__ or "").parent
    return Path(code.co_filename).is_relative_to(package)


def _init_attributes(cls: type) -> list[str]:
    """Public attributes that ``cls.__init__`` (its own, in the core) assigns on ``self``."""
    init = vars(cls).get("__init__")
    if init is None or not _in_core(init):
        return []
    tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    return sorted({target.attr for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   for target in node.targets if isinstance(target, ast.Attribute)
                   and isinstance(target.value, ast.Name) and target.value.id == "self"
                   and not target.attr.startswith("_")})


# -- signatures, types and values, written the same on every Python version -------------------


def _signature(function: Callable[..., object], namer: _Namer, *, drop_first: bool) -> str:
    signature = inspect.signature(function, eval_str=True)
    if drop_first:
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    return _format(signature, namer)


def _format(signature: inspect.Signature, namer: _Namer) -> str:
    parts: list[str] = []
    kinds = inspect.Parameter
    previous: inspect._ParameterKind | None = None
    for parameter in signature.parameters.values():
        if previous == kinds.POSITIONAL_ONLY and parameter.kind != kinds.POSITIONAL_ONLY:
            parts.append("/")
        if parameter.kind == kinds.KEYWORD_ONLY and previous not in (
                kinds.KEYWORD_ONLY, kinds.VAR_POSITIONAL):
            parts.append("*")
        text = {kinds.VAR_POSITIONAL: "*", kinds.VAR_KEYWORD: "**"}.get(parameter.kind, "")
        text += parameter.name
        if parameter.annotation is not inspect.Parameter.empty:
            text += f": {namer.type(parameter.annotation)}"
        if parameter.default is not inspect.Parameter.empty:
            text += f" = {namer.value(parameter.default)}"
        parts.append(text)
        previous = parameter.kind
    if previous == kinds.POSITIONAL_ONLY:
        parts.append("/")
    returns = signature.return_annotation
    shown = "" if returns is inspect.Signature.empty else f" -> {namer.type(returns)}"
    return f"({', '.join(parts)}){shown}"


class _Factory:
    """Stands for a dataclass field's ``default_factory`` in a constructor."""


class _Namer:
    """Writes types and values: exported names bare, everything else fully qualified."""

    def __init__(self, exported: dict[str, object]) -> None:
        self._exported = {id(value): name for name, value in exported.items()
                          if isinstance(value, type)}

    def type(self, annotation: object) -> str:  # noqa: PLR0911 - one case per kind of type
        if annotation is None or annotation is type(None):
            return "None"
        if isinstance(annotation, str | typing.ForwardRef):
            return str(getattr(annotation, "__forward_arg__", annotation))
        if isinstance(annotation, typing.TypeVar):
            return annotation.__name__
        origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
        if origin in (typing.Union, types.UnionType):
            return " | ".join(self.type(argument) for argument in arguments)
        if origin is typing.Literal:
            return f"typing.Literal[{', '.join(self.value(a) for a in arguments)}]"
        if origin is not None:
            shown = ", ".join(self._argument(argument) for argument in arguments)
            return f"{self.type(origin)}[{shown}]" if arguments else self.type(origin)
        if annotation is typing.Any:
            return "typing.Any"
        if isinstance(annotation, type):
            if id(annotation) in self._exported:
                return self._exported[id(annotation)]
            module = annotation.__module__
            return annotation.__qualname__ if module == "builtins" \
                else f"{module}.{annotation.__qualname__}"
        return _without_addresses(repr(annotation))

    def _argument(self, argument: object) -> str:
        if argument is Ellipsis:
            return "..."
        if isinstance(argument, list):  # Callable[[A, B], R]
            return f"[{', '.join(self.type(a) for a in argument)}]"
        return self.type(argument)

    def value(self, value: object) -> str:
        if isinstance(value, _Factory):
            return "<factory>"
        if isinstance(value, enum.Enum):
            return f"{self.type(type(value))}.{value.name}"
        if isinstance(value, frozenset | set):
            inner = ", ".join(sorted(self.value(item) for item in value))
            return f"{type(value).__name__}({{{inner}}})" if value else f"{type(value).__name__}()"
        if isinstance(value, type):
            return self.type(value)
        return _without_addresses(repr(value))


def _without_addresses(text: str) -> str:
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)

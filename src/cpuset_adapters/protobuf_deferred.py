"""Keeps protobuf's pure-Python message implementation out of a process whose messages are
upb's: its modules are loaded only if something reads them.

``google.protobuf.descriptor_pool`` and the generated code's ``builder`` import
``google.protobuf.internal.python_message`` at import time (with ``text_format``, the
pure-Python decoder and encoder, ``pickle``...), but with the upb backend (the C one every
wheel we install ships) no message, descriptor or pool ever calls into it: 1.2 MiB of the
daemon's resident memory for nothing. Before protobuf is first imported, the module is
entered in ``sys.modules`` as a stand-in that imports the real one the first time any of its
attributes is read, so a caller that does use it gets it, loaded then. With the pure-Python
backend (``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``, or no upb for the platform)
nothing is deferred: that backend's messages are ``python_message``. Decision 60.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Final

PURE_PYTHON_MESSAGES: Final = "google.protobuf.internal.python_message"
"""What the upb backend imports and never uses."""

TOO_LATE: Final = "google.protobuf.descriptor_pool"
"""Once this is imported, ``python_message`` is (it imports it at import time)."""


class DeferredModule(types.ModuleType):
    """A stand-in for a module in ``sys.modules``: the first attribute read imports the real
    module in its place and returns the real module's attribute."""

    def __getattr__(self, attribute: str) -> object:
        return getattr(load(self.__name__), attribute)


def load(name: str) -> types.ModuleType:
    """The real module ``name``, imported in its stand-in's place if it was deferred."""
    if isinstance(sys.modules.get(name), DeferredModule):
        del sys.modules[name]
    module = importlib.import_module(name)
    parent, _, child = name.rpartition(".")
    # The import system binds a submodule on its package only when it loads it; the stand-in
    # was bound there too (``from google.protobuf.internal import python_message``).
    setattr(sys.modules[parent], child, module)
    return module


def defer_pure_python_messages() -> bool:
    """Enter the stand-in for :data:`PURE_PYTHON_MESSAGES` unless protobuf is already loaded,
    the module is, or the backend is the pure-Python one; ``True`` when it is deferred (now
    or before)."""
    if isinstance(sys.modules.get(PURE_PYTHON_MESSAGES), DeferredModule):
        return True
    if TOO_LATE in sys.modules or PURE_PYTHON_MESSAGES in sys.modules:
        return False
    # Light: it only finds the backend (google._upb._message, which messages need anyway).
    from google.protobuf.internal import api_implementation  # type: ignore  # noqa: PLC0415

    if api_implementation.Type() == "python":
        return False
    sys.modules[PURE_PYTHON_MESSAGES] = DeferredModule(PURE_PYTHON_MESSAGES)
    return True

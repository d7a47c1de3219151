"""D-Bus messages as the bus client reads them (the D-Bus specification): whole messages framed
out of the bytes read, replies kept and anything else (signals) skipped unparsed, and the few
header fields the client looks at."""

from __future__ import annotations

import struct
from typing import Final

REPLY_SERIAL: Final = 5
ERROR_NAME: Final = 4
RETURN: Final = 2
ERROR: Final = 3
"""Header field codes and the reply message types."""


def next_reply(buffer: bytearray) -> bytes | None:
    """Take whole messages off the front of ``buffer`` up to the first reply (a method return
    or an error) and return that reply's bytes; ``None`` when no whole reply is there yet (the
    messages skipped before it are gone from ``buffer`` all the same)."""
    while len(buffer) >= 16:
        code = "<" if buffer[0:1] == b"l" else ">"
        kind = buffer[1]
        body, fields = struct.unpack_from(code + "I4xI", buffer, 4)
        size = 16 + fields + (-fields % 8) + body
        if len(buffer) < size:
            return None
        chunk = bytes(buffer[:size])
        del buffer[:size]
        if kind in (RETURN, ERROR):
            return chunk
    return None


class Message:
    """jeepney's message, seen through the few fields used here (jeepney has no types)."""

    __slots__ = ("body", "header")

    def __init__(self, message: object) -> None:
        self.header = message.header  # type: ignore[attr-defined]
        self.body: tuple[object, ...] = tuple(message.body)  # type: ignore[attr-defined]

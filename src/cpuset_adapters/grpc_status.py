"""The 17 canonical gRPC status codes, as numbers and names, independent of any gRPC library:
what a CRI call's ``grpc-status`` says (the daemon's CRI reads never import grpc) and what a
ttrpc ``Status.code`` carries (NRI, fact sheet §3.5)."""

from __future__ import annotations

import enum


class StatusCode(enum.IntEnum):
    """gRPC's canonical status codes (grpc/doc/statuscodes.md); the numbers are the wire's."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


def code_name(code: int) -> str:
    """``"NOT_FOUND"`` for 5; the bare number for a code gRPC does not define."""
    try:
        return StatusCode(code).name
    except ValueError:
        return str(code)

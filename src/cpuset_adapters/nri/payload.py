"""Protobuf payloads of ttrpc calls: decoding one (an undecodable payload is the caller's error,
INVALID_ARGUMENT) and encoding one."""

from __future__ import annotations

from typing import Protocol, TypeVar

from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]

from cpuset_adapters.grpc_status import StatusCode
from cpuset_adapters.nri.ttrpc import RpcError


class _Message(Protocol):
    def ParseFromString(self, serialized: bytes, /) -> int: ...  # noqa: N802 - protobuf's name

    def SerializeToString(self) -> bytes: ...  # noqa: N802


_M = TypeVar("_M", bound=_Message)


def decode(message: _M, payload: bytes) -> _M:
    """Parse ``payload`` into ``message``; raises :class:`RpcError` (INVALID_ARGUMENT)."""
    try:
        message.ParseFromString(payload)
    except DecodeError as exc:
        raise RpcError(StatusCode.INVALID_ARGUMENT,
                       f"undecodable {type(message).__name__}: {exc}") from exc
    return message


def encode(message: _Message) -> bytes:
    """The wire bytes of ``message``."""
    return message.SerializeToString()

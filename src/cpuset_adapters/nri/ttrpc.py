"""ttrpc framing: the 10-byte message header, message types and flags, the size limits, status
codes, and the Request/Response envelopes (fact sheet §3).

Pure functions and small values, no I/O: :mod:`cpuset_adapters.nri.mux` moves these bytes over
the runtime's socket.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]

from cpuset_adapters.grpc_status import StatusCode, code_name
from cpuset_adapters.nri.proto import ttrpc_pb2

HEADER_LENGTH = 10
"""uint32 data length, uint32 stream id, uint8 type, uint8 flags; all big-endian."""

MAX_MESSAGE_LENGTH = 4 << 20
"""ttrpc's ``messageLengthMax``: a Go peer rejects (and, from ttrpc 1.2.6, refuses to send) a
message whose data is longer, so nothing we send may exceed it."""

MAX_RECEIVE_LENGTH = (1 << 24) + 4096 - HEADER_LENGTH
"""What we accept. Larger than :data:`MAX_MESSAGE_LENGTH` on purpose: ttrpc 1.2.5 (containerd
1.7 with NRI v0.6.1) does not check on send and delivers Synchronize messages over 4 MiB
(§3.1, §7). Its mux writer fails any write over 16 MiB, and Go's ttrpc writes a message as a
4096-byte buffer flush plus one write of the remainder, so no genuine message is longer than
this; a longer length is garbage or hostile."""

_HEADER = struct.Struct(">IIBB")
_MAX_STREAM_ID = (1 << 32) - 1


class MessageType(enum.IntEnum):
    """The ``type`` byte of the header."""

    REQUEST = 0x01
    RESPONSE = 0x02
    DATA = 0x03  # streaming only; NRI never uses it


class Flags(enum.IntFlag):
    """The ``flags`` byte. Unary calls (all of NRI) always send 0."""

    NONE = 0x00
    REMOTE_CLOSED = 0x01
    REMOTE_OPEN = 0x02
    NO_DATA = 0x04


class TtrpcError(Exception):
    """Base of every error this module and the multiplexer raise."""


class ProtocolError(TtrpcError):
    """The peer sent bytes that are not valid ttrpc (or not valid mux framing)."""


class MessageTooLargeError(TtrpcError):
    """A message to send is longer than :data:`MAX_MESSAGE_LENGTH`; nothing was sent."""


class RpcError(TtrpcError):
    """A call ended with a non-OK status (from the peer, or to be sent to it)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code_name(code)}: {message}")
        self.code = code
        self.message = message


class ConnectionLostError(TtrpcError):
    """The trunk is gone (EOF, a read or write error, malformed input, or a local close)."""


# -- header and messages ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageHeader:
    """The 10-byte header that precedes every ttrpc message."""

    length: int
    stream_id: int
    type: int
    flags: int = 0

    def encode(self) -> bytes:
        return _HEADER.pack(self.length, self.stream_id, self.type, self.flags)

    @classmethod
    def decode(cls, data: bytes) -> MessageHeader:
        """Parse exactly :data:`HEADER_LENGTH` bytes; raises :class:`ProtocolError` otherwise."""
        if len(data) != HEADER_LENGTH:
            raise ProtocolError(f"ttrpc header must be {HEADER_LENGTH} bytes, got {len(data)}")
        length, stream_id, mtype, flags = _HEADER.unpack(data)
        return cls(length=length, stream_id=stream_id, type=mtype, flags=flags)


@dataclass(frozen=True, slots=True)
class Message:
    """One complete ttrpc message as received."""

    stream_id: int
    type: int
    flags: int
    data: bytes


def encode_message(stream_id: int, mtype: MessageType, data: bytes,
                   flags: Flags = Flags.NONE) -> bytes:
    """Return header + data; raises :class:`MessageTooLargeError` past the 4 MiB limit."""
    if len(data) > MAX_MESSAGE_LENGTH:
        raise MessageTooLargeError(
            f"message length {len(data)} exceeds maximum message size of {MAX_MESSAGE_LENGTH}")
    if not 0 <= stream_id <= _MAX_STREAM_ID:
        raise ValueError(f"stream id {stream_id} does not fit in 32 bits")
    return MessageHeader(len(data), stream_id, mtype, flags).encode() + data


class MessageDecoder:
    """Cuts one logical connection's byte stream into ttrpc messages.

    The stream is fed in whatever pieces the multiplexer delivers; frames and messages need not
    line up (§2.4, "Receiving").
    """

    def __init__(self, max_length: int = MAX_RECEIVE_LENGTH) -> None:
        self._buffer = bytearray()
        self._max_length = max_length

    @property
    def buffered(self) -> int:
        """Bytes held that do not yet form a complete message."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Message]:
        """Add ``data``; return every message it completes, in order.

        Raises :class:`ProtocolError` when a header announces more than ``max_length`` bytes
        (the stream cannot be resynchronised after that, so the caller must drop it).
        """
        self._buffer += data
        messages: list[Message] = []
        offset = 0
        buffer = self._buffer
        while len(buffer) - offset >= HEADER_LENGTH:
            length, stream_id, mtype, flags = _HEADER.unpack_from(buffer, offset)
            if length > self._max_length:
                raise ProtocolError(
                    f"ttrpc message length {length} exceeds the {self._max_length}-byte limit")
            end = offset + HEADER_LENGTH + length
            if len(buffer) < end:
                break
            messages.append(Message(stream_id, mtype, flags,
                                    bytes(buffer[offset + HEADER_LENGTH:end])))
            offset = end
        if offset:
            del buffer[:offset]
        return messages


# -- envelopes -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestEnvelope:
    """A decoded ttrpc ``Request``."""

    service: str
    method: str
    payload: bytes
    timeout_nano: int = 0
    metadata: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ResponseEnvelope:
    """A decoded ttrpc ``Response``: ``code`` 0 means success."""

    code: int
    message: str
    payload: bytes

    @property
    def ok(self) -> bool:
        return self.code == StatusCode.OK

    def payload_or_raise(self) -> bytes:
        """The payload; raises :class:`RpcError` for a non-OK status."""
        if not self.ok:
            raise RpcError(self.code, self.message)
        return self.payload


def encode_request(service: str, method: str, payload: bytes, *, timeout_nano: int = 0,
                   metadata: Sequence[tuple[str, str]] = ()) -> bytes:
    """The ``Request`` bytes for one call (service and method travel separately, §3.4)."""
    request = ttrpc_pb2.Request(
        service=service, method=method, payload=payload, timeout_nano=timeout_nano,
        metadata=[ttrpc_pb2.KeyValue(key=k, value=v) for k, v in metadata])
    data: bytes = request.SerializeToString()
    return data


def decode_request(data: bytes) -> RequestEnvelope:
    """Parse ``Request`` bytes; raises :class:`ProtocolError` on garbage."""
    try:
        request: ttrpc_pb2.Request = ttrpc_pb2.Request.FromString(data)
    except DecodeError as exc:
        raise ProtocolError(f"undecodable ttrpc request: {exc}") from exc
    return RequestEnvelope(
        service=request.service, method=request.method, payload=request.payload,
        timeout_nano=request.timeout_nano,
        metadata=tuple((kv.key, kv.value) for kv in request.metadata))


def encode_response(payload: bytes) -> bytes:
    """A success ``Response``: the payload and no status, as the Go server sends it."""
    data: bytes = ttrpc_pb2.Response(payload=payload).SerializeToString()
    return data


def encode_error_response(code: int, message: str) -> bytes:
    """An error ``Response``: a status and no payload, as the Go server sends it."""
    if code == StatusCode.OK:
        raise ValueError("an error response needs a non-OK code")
    status = ttrpc_pb2.Status(code=code, message=message)
    data: bytes = ttrpc_pb2.Response(status=status).SerializeToString()
    return data


def decode_response(data: bytes) -> ResponseEnvelope:
    """Parse ``Response`` bytes; raises :class:`ProtocolError` on garbage.

    A present status with code 0 counts as success, as the Go client treats it.
    """
    try:
        response: ttrpc_pb2.Response = ttrpc_pb2.Response.FromString(data)
    except DecodeError as exc:
        raise ProtocolError(f"undecodable ttrpc response: {exc}") from exc
    return ResponseEnvelope(code=response.status.code, message=response.status.message,
                            payload=response.payload)

"""ttrpc framing and envelopes match the byte layouts of the protocol fact sheet (§3)."""

from __future__ import annotations

import pytest

from cpuset_adapters.grpc_status import StatusCode, code_name
from cpuset_adapters.nri import ttrpc
from cpuset_adapters.nri.proto import nri_pb2 as pb
from cpuset_adapters.nri.ttrpc import (
    HEADER_LENGTH,
    MAX_MESSAGE_LENGTH,
    MAX_RECEIVE_LENGTH,
    Flags,
    MessageDecoder,
    MessageHeader,
    MessageTooLargeError,
    MessageType,
    ProtocolError,
    RpcError,
)

RUNTIME = "nri.pkg.api.v1alpha1.Runtime"

# §3.6, RegisterPlugin {name "aaaaaaaaaa", idx "10"} with a 1 s deadline, derived field by field:
#   RegisterPluginRequest: 0a 0a "aaaaaaaaaa"   name = field 1, wire type 2 (0x0a), 10 bytes
#                          12 02 "10"           idx  = field 2 (0x12), 2 bytes   -> 16 bytes
#   Request: 0a 1c <28-byte service>            field 1, len 0x1c
#            12 0e <14-byte "RegisterPlugin">   field 2, len 0x0e
#            1a 10 <16-byte payload>            field 3, len 0x10
#            20 80 94 eb dc 03                  field 4 varint: 1e9 = 0x3b9aca00 in 7-bit groups,
#                                               low first: 0x00 0x14 0x6b 0x5c 0x03, each but the
#                                               last with 0x80 set -> 80 94 eb dc 03
#   2 + 28 + 2 + 14 + 2 + 16 + 1 + 5 = 70 = 0x46 bytes of data
#   ttrpc header: 00000046 (length) 00000001 (stream 1) 01 (Request) 00 (flags)
REGISTER_PAYLOAD = bytes.fromhex("0a0a") + b"a" * 10 + bytes.fromhex("1202") + b"10"
REGISTER_REQUEST = (bytes.fromhex("0a1c") + RUNTIME.encode() + bytes.fromhex("120e")
                    + b"RegisterPlugin" + bytes.fromhex("1a10") + REGISTER_PAYLOAD
                    + bytes.fromhex("208094ebdc03"))
REGISTER_MESSAGE = bytes.fromhex("00000046 00000001 01 00") + REGISTER_REQUEST

# §3.6, the runtime's reply: an empty Response is 0 data bytes, so the header alone:
#   00000000 (length 0) 00000001 (stream 1) 02 (Response) 00
EMPTY_REPLY = bytes.fromhex("00000000 00000001 02 00")

# §3.6, CreateContainerResponse adjusting cpus "2-3" and mems "0", as a Response on stream 1:
#   LinuxCPU:  32 03 "2-3" (cpus = field 6 -> 0x32)  3a 01 "0" (mems = field 7 -> 0x3a)  = 8
#   LinuxResources: 12 08 <cpu>        (cpu = field 2)                                    = 10
#   LinuxContainerAdjustment: 12 0a <resources> (resources = field 2)                   = 12
#   ContainerAdjustment: 32 0c <linux> (linux = field 6)                                 = 14
#   CreateContainerResponse: 0a 0e <adjust> (adjust = field 1)                           = 16
#   Response: 12 10 <payload> (payload = field 2)                                        = 18
#   ttrpc header: 00000012 00000001 02 00
CREATE_REPLY = bytes.fromhex("00000012 00000001 02 00 1210 0a0e 320c 120a 1208 3203") \
    + b"2-3" + bytes.fromhex("3a01") + b"0"


def test_header_layout_is_length_stream_type_flags_big_endian() -> None:
    header = MessageHeader(length=70, stream_id=1, type=MessageType.REQUEST)
    assert header.encode() == bytes.fromhex("00000046 00000001 01 00")
    assert MessageHeader.decode(bytes.fromhex("01020304 a0b0c0d1 02 05")) == MessageHeader(
        length=0x01020304, stream_id=0xA0B0C0D1, type=2, flags=5)


def test_header_decode_rejects_a_wrong_length() -> None:
    with pytest.raises(ProtocolError):
        MessageHeader.decode(b"\x00" * 9)


def test_register_plugin_request_matches_the_worked_example_byte_for_byte() -> None:
    payload = pb.RegisterPluginRequest(plugin_name="a" * 10, plugin_idx="10").SerializeToString()
    assert payload == REGISTER_PAYLOAD
    request = ttrpc.encode_request(RUNTIME, "RegisterPlugin", payload, timeout_nano=10**9)
    assert request == REGISTER_REQUEST
    assert ttrpc.encode_message(1, MessageType.REQUEST, request) == REGISTER_MESSAGE


def test_the_runtimes_empty_reply_decodes_as_success_with_no_payload() -> None:
    [message] = MessageDecoder().feed(EMPTY_REPLY)
    assert (message.stream_id, message.type, message.flags) == (1, MessageType.RESPONSE, 0)
    response = ttrpc.decode_response(message.data)
    assert response.ok
    assert response.payload_or_raise() == b""


def test_a_success_reply_with_an_empty_message_is_the_header_alone() -> None:
    assert ttrpc.encode_message(1, MessageType.RESPONSE, ttrpc.encode_response(b"")) == EMPTY_REPLY


def test_create_container_response_matches_the_worked_example() -> None:
    response = pb.CreateContainerResponse()
    response.adjust.linux.resources.cpu.cpus = "2-3"
    response.adjust.linux.resources.cpu.mems = "0"
    data = ttrpc.encode_response(response.SerializeToString())
    assert ttrpc.encode_message(1, MessageType.RESPONSE, data) == CREATE_REPLY


def test_error_response_carries_a_status_and_no_payload() -> None:
    # Response.status = field 1 (0a), 14 bytes: code = field 1 varint (08 0c = 12),
    # message = field 2 (12 0a "method Foo").
    data = ttrpc.encode_error_response(StatusCode.UNIMPLEMENTED, "method Foo")
    assert data == bytes.fromhex("0a0e 080c 120a") + b"method Foo"
    decoded = ttrpc.decode_response(data)
    assert (decoded.code, decoded.message, decoded.payload) == (12, "method Foo", b"")
    with pytest.raises(RpcError) as caught:
        decoded.payload_or_raise()
    assert caught.value.code == StatusCode.UNIMPLEMENTED
    assert "UNIMPLEMENTED" in str(caught.value)


def test_an_error_response_needs_a_non_ok_code() -> None:
    with pytest.raises(ValueError, match="non-OK"):
        ttrpc.encode_error_response(StatusCode.OK, "fine")


def test_a_status_with_code_zero_counts_as_success() -> None:
    # Response{status{code 0, message "x"}, payload "p"}: 0a 03 (12 01 "x") 12 01 "p"
    decoded = ttrpc.decode_response(bytes.fromhex("0a03 1201") + b"x" + bytes.fromhex("1201")
                                    + b"p")
    assert decoded.ok
    assert decoded.payload_or_raise() == b"p"


def test_request_round_trip_keeps_metadata_and_deadline() -> None:
    data = ttrpc.encode_request("svc", "M", b"\x01\x02", timeout_nano=5,
                                metadata=[("traceparent", "00-ab-cd-01"), ("k", "v")])
    request = ttrpc.decode_request(data)
    assert request == ttrpc.RequestEnvelope("svc", "M", b"\x01\x02", 5,
                                            (("traceparent", "00-ab-cd-01"), ("k", "v")))


@pytest.mark.parametrize("garbage", [b"\xff", b"\x0a\x05ab", b"\x0a\x02\xc3\x28", b"\x07"])
def test_garbage_envelopes_raise_protocol_error(garbage: bytes) -> None:
    # truncated varint tag; length past the end; invalid UTF-8 in a string; wire type 7
    with pytest.raises(ProtocolError):
        ttrpc.decode_request(garbage)
    with pytest.raises(ProtocolError):
        ttrpc.decode_response(garbage)


def test_status_codes_are_the_grpc_numbers() -> None:
    assert [StatusCode.OK, StatusCode.CANCELLED, StatusCode.UNKNOWN, StatusCode.INVALID_ARGUMENT,
            StatusCode.DEADLINE_EXCEEDED, StatusCode.NOT_FOUND, StatusCode.RESOURCE_EXHAUSTED,
            StatusCode.FAILED_PRECONDITION, StatusCode.UNIMPLEMENTED,
            StatusCode.INTERNAL] == [0, 1, 2, 3, 4, 5, 8, 9, 12, 13]
    assert code_name(12) == "UNIMPLEMENTED"
    assert code_name(99) == "99"


def test_types_and_flags_are_the_ttrpc_values() -> None:
    assert [MessageType.REQUEST, MessageType.RESPONSE, MessageType.DATA] == [1, 2, 3]
    assert [Flags.REMOTE_CLOSED, Flags.REMOTE_OPEN, Flags.NO_DATA] == [1, 2, 4]


def test_limits() -> None:
    assert HEADER_LENGTH == 10
    assert MAX_MESSAGE_LENGTH == 4194304
    # v0.6.1 sends over 4 MiB (§3.1): we must accept at least its 5,892,230-byte Synchronize
    assert MAX_RECEIVE_LENGTH > 5_892_230


def test_sending_more_than_4_mib_is_refused_and_exactly_4_mib_is_not() -> None:
    assert len(ttrpc.encode_message(1, MessageType.REQUEST, bytes(MAX_MESSAGE_LENGTH))) == \
        MAX_MESSAGE_LENGTH + HEADER_LENGTH
    with pytest.raises(MessageTooLargeError, match="4194305 exceeds"):
        ttrpc.encode_message(1, MessageType.REQUEST, bytes(MAX_MESSAGE_LENGTH + 1))


def test_stream_ids_must_fit_32_bits() -> None:
    with pytest.raises(ValueError, match="32 bits"):
        ttrpc.encode_message(1 << 32, MessageType.REQUEST, b"")


def test_decoder_reassembles_a_message_fed_one_byte_at_a_time() -> None:
    decoder = MessageDecoder()
    out = []
    for i in range(len(REGISTER_MESSAGE)):
        out += decoder.feed(REGISTER_MESSAGE[i:i + 1])
        if i < len(REGISTER_MESSAGE) - 1:
            assert not out
    [message] = out
    assert message.data == REGISTER_REQUEST
    assert decoder.buffered == 0


def test_decoder_returns_every_message_of_one_feed_in_order() -> None:
    decoder = MessageDecoder()
    messages = decoder.feed(EMPTY_REPLY + CREATE_REPLY + REGISTER_MESSAGE[:5])
    assert [m.type for m in messages] == [MessageType.RESPONSE, MessageType.RESPONSE]
    assert messages[1].data == CREATE_REPLY[10:]
    assert decoder.buffered == 5


def test_decoder_accepts_messages_over_4_mib_as_v0_6_1_sends_them() -> None:
    body = bytes(5_000_000)
    [message] = MessageDecoder().feed(
        ttrpc.MessageHeader(len(body), 1, MessageType.REQUEST).encode() + body)
    assert len(message.data) == 5_000_000


def test_decoder_rejects_a_length_past_its_limit_without_waiting_for_the_data() -> None:
    decoder = MessageDecoder(max_length=100)
    with pytest.raises(ProtocolError, match="101 exceeds"):
        decoder.feed(bytes.fromhex("00000065 00000001 01 00"))
    with pytest.raises(ProtocolError):
        MessageDecoder().feed(bytes.fromhex("ffffffff 00000001 01 00"))

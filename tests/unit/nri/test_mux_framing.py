"""The trunk multiplexer's pure framing: the frame layout, the §2.4 sending rule (first 4096
bytes, then the rest) and the frame decoder.
"""

from __future__ import annotations

import struct

import pytest

from cpuset_adapters.nri.mux_frames import (
    MAX_FRAME_LENGTH,
    FrameDecoder,
    encode_frame,
    frame_message,
)
from cpuset_adapters.nri.ttrpc import ProtocolError

# -- pure framing ----------------------------------------------------------------------------


def test_frame_header_is_conn_id_and_length_big_endian() -> None:
    assert encode_frame(2, b"abc") == bytes.fromhex("00000002 00000003") + b"abc"


@pytest.mark.parametrize(("size", "frames"), [
    (10, [10]), (4096, [4096]), (4097, [4096, 1]), (5_000_000, [4096, 5_000_000 - 4096])])
def test_a_message_goes_out_as_its_first_4096_bytes_then_the_whole_rest(size: int,
                                                                      frames: list[int]) -> None:
    message = bytes(range(256)) * (size // 256) + bytes(size % 256)
    out = frame_message(1, message)
    assert [struct.unpack(">II", f[:8]) for f in out] == [(1, n) for n in frames]
    assert b"".join(f[8:] for f in out) == message


def test_no_zero_length_frames() -> None:
    assert frame_message(1, b"") == []


def test_frame_decoder_handles_a_frame_split_across_reads() -> None:
    wire = encode_frame(2, b"hello") + encode_frame(1, b"world!")
    decoder = FrameDecoder()
    pieces = []
    for i in range(len(wire)):
        pieces += decoder.feed(wire[i:i + 1])
    assert [(c, b"".join(p for cc, p in pieces if cc == c)) for c in (1, 2)] == [
        (1, b"world!"), (2, b"hello")]
    assert not decoder.mid_frame


def test_frame_decoder_returns_two_frames_of_one_read() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(encode_frame(2, b"a") + encode_frame(1, b"bc") + b"\x00\x00") == [
        (2, b"a"), (1, b"bc")]
    assert decoder.mid_frame


def test_frame_decoder_refuses_an_oversized_length_before_reading_it() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(struct.pack(">II", 2, MAX_FRAME_LENGTH)) == []
    with pytest.raises(ProtocolError, match="claims"):
        FrameDecoder().feed(struct.pack(">II", 2, MAX_FRAME_LENGTH + 1))


def test_frame_decoder_skips_zero_length_frames() -> None:
    assert FrameDecoder().feed(encode_frame(1, b"") + encode_frame(1, b"x")) == [(1, b"x")]

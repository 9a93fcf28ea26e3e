"""The compact binary audio frame: a 16-byte header and raw PCM16 samples.

Layout (little-endian)::

    offset size field
    0      1    kind        1 = audio in (client → server), 2 = audio out (server → client)
    1      1    flags       bit 0: last chunk of the stream
    2      2    reserved    0
    4      4    stream_id   input turn number, or response number for output
    8      8    seq         chunk sequence (input) or session event seq (output)
    16     ...  payload     PCM16 mono little-endian samples, no base64

The first byte (1 or 2) can never begin a msgpack map (0x80-0x8f, 0xde, 0xdf),
so audio frames and msgpack messages share binary frames without ambiguity.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation

HEADER = struct.Struct("<BBHIQ")
HEADER_SIZE = HEADER.size
MAX_STREAM_ID = 2**32 - 1
"""The largest stream id a frame's header holds (an unsigned 32-bit field)."""
FLAG_LAST = 0x01


class AudioKind(enum.IntEnum):
    """Direction of an audio frame."""

    INPUT = 1
    OUTPUT = 2


class AudioFrame(NamedTuple):
    """A decoded audio frame (a tuple: one is made for every 20 ms of every voice session)."""

    kind: AudioKind
    stream_id: int
    seq: int
    payload: bytes
    last: bool = False

    def encode(self) -> bytes:
        """Serialize header and payload into one binary frame."""
        flags = FLAG_LAST if self.last else 0
        return HEADER.pack(self.kind, flags, 0, self.stream_id, self.seq) + self.payload


_KINDS = {AudioKind.INPUT.value: AudioKind.INPUT, AudioKind.OUTPUT.value: AudioKind.OUTPUT}


def output_audio_frame(stream_id: int, seq: int, audio: bytes) -> bytes:
    """The binary frame of a ``response.audio.delta`` event."""
    return HEADER.pack(AudioKind.OUTPUT, 0, 0, stream_id, seq) + audio


def response_stream_id(response_id: str) -> int:
    """The audio stream id of a response (``resp_7`` → 7)."""
    return int(response_id.rpartition("_")[2])


def stream_response_id(stream_id: int) -> str:
    """Inverse of :func:`response_stream_id`."""
    return f"resp_{stream_id}"


def audio_event_from_frame(frame: bytes) -> dict[str, object]:
    """A received ``response.audio.delta`` frame as an event message (what a client sees).

    ``audio`` holds the PCM16 payload; ``response_id`` comes from the stream id.
    """
    decoded = decode_audio_frame(frame)
    if decoded.kind is not AudioKind.OUTPUT:
        raise ProtocolViolation(ErrorCode.INVALID_FRAME, "servers send audio frames of kind 2")
    return {
        "type": "response.audio.delta",
        "seq": decoded.seq,
        "response_id": stream_response_id(decoded.stream_id),
        "audio": decoded.payload,
    }


def is_audio_frame(frame: bytes) -> bool:
    """Whether a binary frame is an audio frame (rather than a msgpack message)."""
    return len(frame) > 0 and frame[0] in (AudioKind.INPUT, AudioKind.OUTPUT)


def decode_audio_frame(frame: bytes) -> AudioFrame:
    """Parse an audio frame; the payload must be whole PCM16 samples."""
    if len(frame) < HEADER_SIZE:
        raise ProtocolViolation(ErrorCode.INVALID_FRAME, "audio frame shorter than its header")
    kind, flags, reserved, stream_id, seq = HEADER.unpack_from(frame)
    if kind not in (AudioKind.INPUT, AudioKind.OUTPUT):
        raise ProtocolViolation(ErrorCode.INVALID_FRAME, f"unknown audio frame kind {kind}")
    if reserved != 0 or flags & ~FLAG_LAST:
        raise ProtocolViolation(ErrorCode.INVALID_FRAME, "audio frame reserved bits are set")
    payload = frame[HEADER_SIZE:]
    if len(payload) % 2:
        raise ProtocolViolation(ErrorCode.INVALID_FRAME, "audio payload is not whole pcm16 samples")
    return AudioFrame(_KINDS[kind], stream_id, seq, payload, bool(flags & FLAG_LAST))

"""Frame encodings, negotiated by WebSocket subprotocol.

* ``wsserver.v1.json``: every message is a JSON object in a text frame.
* ``wsserver.v1.msgpack``: every message is a msgpack map in a binary frame.

Both carry the same fields. Audio travels in the compact binary audio frame
(:mod:`protocol.audio_frame`) under either encoding; a binary frame is an audio
frame exactly when its first byte is an audio frame kind, which can never start
a msgpack map.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

import msgpack

from protocol.audio_frame import output_audio_frame
from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.events import AUDIO_DELTA, TEXT_DELTA, Event, TextDelta

JSON_SUBPROTOCOL = "wsserver.v1.json"
MSGPACK_SUBPROTOCOL = "wsserver.v1.msgpack"
SUBPROTOCOLS: tuple[str, ...] = (JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL)


class Codec(Protocol):
    """Turns message dicts into frames and back."""

    subprotocol: str

    def encode(self, message: Mapping[str, Any]) -> str | bytes:
        """Encode one message into the payload of one frame."""
        ...

    def decode(self, frame: str | bytes) -> Any:
        """Decode one frame into a message object (validated later)."""
        ...

    def encode_event(self, event: Event) -> str | bytes:
        """Encode a session event (the hot path: one per token)."""
        ...


class JsonCodec:
    """JSON text frames: readable, the default."""

    subprotocol = JSON_SUBPROTOCOL

    def __init__(self) -> None:
        self._encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
        self._string = self._encoder.encode

    def encode(self, message: Mapping[str, Any]) -> str:
        return self._encoder.encode(message)

    def encode_event(self, event: Event) -> str | bytes:
        if type(event) is TextDelta:
            # One per token: format the fixed shape directly instead of building a dict.
            fields = event.fields
            return (
                f'{{"type":"{TEXT_DELTA}","seq":{event.seq},'
                f'"response_id":{self._string(fields["response_id"])},'
                f'"delta":{self._string(fields["delta"])}}}'
            )
        if event.type == AUDIO_DELTA:
            return encode_audio_event(event)
        return self._encoder.encode(event.to_message())

    def decode(self, frame: str | bytes) -> Any:
        if isinstance(frame, bytes):
            raise ProtocolViolation(
                ErrorCode.INVALID_FRAME, "binary frames carry only audio under json encoding"
            )
        try:
            return json.loads(frame)
        except ValueError:
            raise ProtocolViolation(
                ErrorCode.INVALID_JSON, "text frame is not valid json"
            ) from None


class MsgpackCodec:
    """Msgpack binary frames: smaller and faster to parse."""

    subprotocol = MSGPACK_SUBPROTOCOL

    def __init__(self) -> None:
        self._packer = msgpack.Packer(use_bin_type=True)

    def encode(self, message: Mapping[str, Any]) -> bytes:
        return self._packer.pack(message)

    def encode_event(self, event: Event) -> bytes:
        if event.type == AUDIO_DELTA:
            return encode_audio_event(event)
        return self._packer.pack(event.to_message())

    def decode(self, frame: str | bytes) -> Any:
        if isinstance(frame, str):
            raise ProtocolViolation(
                ErrorCode.INVALID_FRAME, "text frames are not used under msgpack encoding"
            )
        try:
            return msgpack.unpackb(frame, raw=False, strict_map_key=True)
        except (ValueError, msgpack.UnpackException, TypeError):
            raise ProtocolViolation(
                ErrorCode.INVALID_MSGPACK, "binary frame is not valid msgpack"
            ) from None


def encode_audio_event(event: Event) -> bytes:
    """Audio output travels as a binary audio frame under every encoding."""
    fields = event.fields
    return output_audio_frame(fields["stream_id"], event.seq, fields["audio"])


_JSON = JsonCodec()
_MSGPACK = MsgpackCodec()


def codec_for(subprotocol: str | None) -> Codec:
    """The codec for a negotiated subprotocol; JSON when none was negotiated.

    Codecs hold no per-connection state, so every connection shares one of each.
    """
    if subprotocol == MSGPACK_SUBPROTOCOL:
        return _MSGPACK
    return _JSON

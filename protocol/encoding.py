"""Frame encodings, negotiated by WebSocket subprotocol.

* ``wsserver.v1.json``: every message is a JSON object in a text frame.
* ``wsserver.v1.msgpack``: every message is a msgpack map in a binary frame.

Both carry the same fields. Decoding bounds what a frame may hold before anything
else sees it: nesting deeper than :data:`~protocol.json_value.MAX_DEPTH` levels and
text that is not valid Unicode (a JSON ``\\ud800`` escape without its pair) are
refused here (``invalid_json`` / ``invalid_msgpack``); the remaining JSON-data checks
(bytes, ext types, non-string keys, non-finite numbers) name the offending field and
are made by :func:`protocol.messages.parse_client_message`. Audio travels in the
compact binary audio frame (:mod:`protocol.audio_frame`) under either encoding; a
binary frame is an audio frame exactly when its first byte is an audio frame kind,
which can never start a msgpack map.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Protocol

import msgpack

from protocol.audio_frame import output_audio_frame
from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.events import AUDIO_DELTA, TEXT_DELTA, Event, TextDelta
from protocol.json_value import MAX_DEPTH, exceeds_depth, has_invalid_text

JSON_SUBPROTOCOL = "wsserver.v1.json"
MSGPACK_SUBPROTOCOL = "wsserver.v1.msgpack"
SUBPROTOCOLS: tuple[str, ...] = (JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL)
TOKEN_SUBPROTOCOL_PREFIX = "wsserver.token."
"""A subprotocol entry carrying a client token, offered after the encoding; never selected."""


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
            value = _DECODER.decode(frame)
        except RecursionError:
            # The parser recursed as far as the interpreter allows (hundreds of levels).
            raise ProtocolViolation(ErrorCode.INVALID_JSON, _TOO_DEEP) from None
        except ValueError:
            raise ProtocolViolation(
                ErrorCode.INVALID_JSON, "text frame is not valid json"
            ) from None
        # Fewer brackets than the limit cannot nest past it: the common case costs two counts.
        if frame.count("[") + frame.count("{") > MAX_DEPTH and exceeds_depth(value):
            raise ProtocolViolation(ErrorCode.INVALID_JSON, _TOO_DEEP)
        # A text frame is valid UTF-8, so a lone surrogate can only come from a \u escape.
        if _SURROGATE_ESCAPE.search(frame) is not None and has_invalid_text(value):
            raise ProtocolViolation(
                ErrorCode.INVALID_JSON, "text frame holds a lone surrogate escape (invalid text)"
            )
        return value


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
            # Strings are decoded as strict UTF-8: invalid text (encoded surrogates too) fails.
            value = msgpack.unpackb(frame, raw=False, strict_map_key=True)
        except msgpack.StackError:
            # Nested past msgpack's own stack (about a thousand levels).
            raise ProtocolViolation(ErrorCode.INVALID_MSGPACK, _TOO_DEEP) from None
        except (ValueError, msgpack.UnpackException, TypeError):
            raise ProtocolViolation(
                ErrorCode.INVALID_MSGPACK, "binary frame is not valid msgpack"
            ) from None
        # Every level costs at least a byte: a short frame cannot nest past the limit.
        if len(frame) > MAX_DEPTH and exceeds_depth(value):
            raise ProtocolViolation(ErrorCode.INVALID_MSGPACK, _TOO_DEEP)
        return value


_TOO_DEEP = f"message nests deeper than {MAX_DEPTH} levels"


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not json")


# NaN and Infinity are not JSON (RFC 8259); the decoder would otherwise accept them.
_DECODER = json.JSONDecoder(parse_constant=_not_json)


# A possible surrogate escape (\\uD800-\\uDFFF); a hit is confirmed on the decoded value.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


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

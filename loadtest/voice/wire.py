"""The lean client connection with binary frames both ways, for voice sessions.

:class:`loadtest.common.wire.LeanConnection` refuses binary frames (the text benchmarks
never get any). A voice session receives its answer's audio as binary frames
and sends its microphone as binary frames, 50 per second per session: the
sending side is pre-masked so a frame costs the client a 16-byte mask and a write.

Masking: RFC 6455 wants a fresh mask key per frame so that a browser's page
cannot steer the bytes an intermediary sees. The benchmark talks to a loopback
server, which unmasks with whatever key a frame carries; one key per client
process lets every chunk of the looped fixtures be masked once, at start.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

from websockets.utils import apply_mask

from loadtest.common.wire import OP_BINARY, LeanConnection
from loadtest.voice.audio import CHUNK_BYTES, HEADER_BYTES
from protocol.encoding import JSON_SUBPROTOCOL

_FRAME_BYTES = HEADER_BYTES + CHUNK_BYTES


class FrameMask:
    """One mask key and the WebSocket header of a binary frame of one audio chunk."""

    def __init__(self) -> None:
        self.key = os.urandom(4)
        # FIN + binary, masked, 16-bit extended length (a chunk frame is 656 bytes).
        self.prefix = struct.pack("!BBH", 0x80 | OP_BINARY, 0x80 | 126, _FRAME_BYTES) + self.key

    def mask(self, data: bytes) -> bytes:
        """``data`` masked from key offset 0 (pieces of a multiple of 4 bytes stay aligned)."""
        return apply_mask(data, self.key)

    def head(self, audio_header: bytes) -> bytes:
        """The bytes before the chunk's samples: WebSocket header and the masked audio header."""
        return self.prefix + apply_mask(audio_header, self.key)


class VoiceConnection(LeanConnection):
    """A lean connection that also delivers binary messages (to ``on_binary``)."""

    def __init__(self, host: str, port: int, path: str) -> None:
        super().__init__(host, port, path)
        # Offer the JSON subprotocol as SDK clients do (the request ends with a blank line).
        offer = f"Sec-WebSocket-Protocol: {JSON_SUBPROTOCOL}\r\n\r\n".encode()
        self._request = self._request.removesuffix(b"\r\n") + offer
        self.on_binary: Callable[[bytes], None] = _ignore

    def send_raw(self, data: bytes) -> None:
        """Write already framed bytes (a pre-masked audio frame)."""
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)

    def _on_frame(self, fin: int, opcode: int, payload: bytes) -> None:
        if opcode == OP_BINARY and fin:
            self.on_binary(payload)
        else:
            super()._on_frame(fin, opcode, payload)


def _ignore(frame: bytes) -> None:
    """Binary handler until a driver takes over (no audio is owed before then)."""

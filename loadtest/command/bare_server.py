"""The baseline of ``python -m loadtest``: the stream bench's bare server, with voice frames.

:mod:`loadtest.stream.bare_server` (a plain ``websockets`` server sending one frame per
token on a shared decode clock) plus what the new scenarios ask of it, and nothing more:
a voice session's answer also sends one binary audio frame per token (100 ms of 16 kHz
PCM16, as the simulated engine), an input audio frame flagged last commits a turn and
starts an answer, and ``session.resume`` is answered with a fresh ``session.ready``
(``resumed: false``): it keeps no session to resume, so the client asks again.

Run it with ``python -m loadtest.command.bare_server --port 0``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence

import uvloop
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from loadtest.stream import bare_server as stream_bare
from protocol.audio_frame import FLAG_LAST, output_audio_frame


def audio_per_token(decode_rate: float) -> bytes:
    """One decode step of 16 kHz PCM16 silence: the simulated engine's syllable per token."""
    return bytes(2 * int(16000 / decode_rate))


class VoiceBareConnection(stream_bare.BareConnection):
    """One client; audio out per token when the session asked for it."""

    def __init__(self, ws: ServerConnection, app: VoiceBareServer) -> None:
        super().__init__(ws, app)
        self.audio_out = False
        self.turns_answer = True
        self.audio = audio_per_token(app.clock_rate)

    async def on_frame(self, frame: str | bytes) -> None:
        """Audio frames and the session messages the stream bench's server lacks."""
        if isinstance(frame, bytes):
            # A chunk flagged last commits the turn; every other chunk is dropped.
            last = len(frame) >= 2 and frame[0] == 1 and frame[1] & FLAG_LAST
            if last and self.turns_answer:
                await self._create()
            return
        try:
            message = json.loads(frame)
            kind = message["type"]
        except (ValueError, TypeError, KeyError):
            await super().on_frame(frame)
            return
        if kind in ("session.start", "session.resume"):
            audio = message.get("audio") if kind == "session.start" else None
            audio = audio if isinstance(audio, dict) else {}
            self.audio_out = bool(audio.get("output"))
            turns = audio.get("turn_detection")
            self.turns_answer = not isinstance(turns, dict) or turns.get("create_response", True)
            await self.ws.send(
                json.dumps({"type": "session.ready", "session_id": "bare", "resumed": False})
            )
        else:
            await super().on_frame(frame)

    async def _produce(self, stream: stream_bare.Stream) -> None:
        app = self.app
        try:
            if app.prefill_s > 0:
                await asyncio.sleep(app.prefill_s)
            for index in range(app.answer_tokens):
                await app.clock.next_step()
                if stream.stopped:
                    return
                word = stream_bare._WORDS[(self.responses + index) % len(stream_bare._WORDS)]
                stream.delivered += 1
                app.tokens_sent += 1
                await self.send_event(
                    "response.text.delta",
                    response_id=stream.response_id,
                    delta=word if index == 0 else " " + word,
                )
                if self.audio_out:
                    self.seq += 1
                    await self.ws.send(output_audio_frame(self.responses, self.seq, self.audio))
            if not stream.stopped:
                stream.stopped = True
                await self._done(stream, "completed")
        except ConnectionClosed:
            stream.stopped = True


class VoiceBareServer(stream_bare.BareServer):
    """The stream bench's bare server with :class:`VoiceBareConnection`."""

    connection_class = VoiceBareConnection

    def __init__(self, *, decode_rate: float, answer_tokens: int, prefill_ms: float) -> None:
        super().__init__(
            decode_rate=decode_rate, answer_tokens=answer_tokens, prefill_ms=prefill_ms
        )
        self.clock_rate = decode_rate


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: the stream bench's flags and serving loop, this connection class."""
    parser = stream_bare.build_parser()
    parser.prog = "python -m loadtest.command.bare_server"
    args = parser.parse_args(argv)
    if args.decode_rate <= 0 or args.answer_tokens < 1:
        print("decode rate must be > 0 and answer tokens >= 1", file=sys.stderr)
        return 2
    stream_bare.BareServer = VoiceBareServer  # type: ignore[misc]
    return uvloop.run(stream_bare.serve_bare(args))


if __name__ == "__main__":
    sys.exit(main())

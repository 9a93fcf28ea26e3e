"""The SDK's voice: microphone audio out, playback reports back, audio resent on resume."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from websockets.asyncio.client import ClientConnection

from wsserver.client.errors import ClientError
from wsserver.client.microphone import Microphone
from wsserver.client.playback import RealtimePlayer
from wsserver.client.reconnect import ReconnectingConnection

DEFAULT_SAMPLE_RATE = 16000


class VoiceChannel:
    """Input audio of a session, and what it reports of the audio it played."""

    def __init__(
        self,
        connection: ReconnectingConnection,
        audio: dict[str, Any] | None,
        *,
        simulate_playback: bool,
        playback_report_interval: float,
    ) -> None:
        """``audio``: the ``session.start`` audio settings (None: a text session)."""
        self._connection = connection
        self.sample_rate = int((audio or {}).get("sample_rate", DEFAULT_SAMPLE_RATE))
        self.microphone = Microphone(self.sample_rate)
        barge_in = (audio or {}).get("turn_detection", {}).get("interrupt_response", True)
        self.player = (
            RealtimePlayer(self.sample_rate, stop_on_speech=bool(barge_in))
            if simulate_playback
            else None
        )
        """The simulated player (``simulate_playback=True``), else None."""
        self.playback_report_interval = playback_report_interval
        self._reporter: asyncio.Task[None] | None = None

    def set_audio(self, audio: dict[str, Any]) -> None:
        """New audio settings (``update_session``): a text session's rate may change."""
        rate = int(audio.get("sample_rate", DEFAULT_SAMPLE_RATE))
        if rate != self.sample_rate:
            # Only a text session can change its rate: its microphone never sent a chunk.
            self.sample_rate = rate
            self.microphone = Microphone(rate)

    def start_reporting(self) -> None:
        """With a simulated player, report its position every ``playback_report_interval``."""
        if self.player is not None:
            self._reporter = asyncio.create_task(self._report_playback_loop(self.player))

    def stop_reporting(self) -> None:
        """Stop the playback reports (the session closes)."""
        if self._reporter is not None:
            self._reporter.cancel()

    async def send_audio(self, pcm: bytes, *, last: bool = False) -> None:
        """Send PCM16 in numbered chunks; while disconnected they wait for the resend."""
        for frame in self.microphone.frames(pcm, last=last):
            # A drop mid-send: the chunk is resent after the resume.
            await self._connection.send_if_connected(frame)

    async def stream_audio(self, pcm: bytes, *, chunk_ms: int = 20, last: bool = False) -> None:
        """Send PCM16 at real-time pace, ``chunk_ms`` at a time, as a microphone would."""
        step = self.sample_rate * 2 * chunk_ms // 1000
        loop = asyncio.get_running_loop()
        start = loop.time()
        for index, offset in enumerate(range(0, len(pcm), step)):
            # A microphone delivers a chunk once it is recorded, at the end of its
            # interval; paced from the start time, so scheduling delays do not add up.
            delay = start + (index + 1) * chunk_ms / 1000 - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            final = last and offset + step >= len(pcm)
            await self.send_audio(pcm[offset : offset + step], last=final)

    async def report_playback(self, response_id: str, played_ms: int) -> None:
        """Tell the server how much of a response's audio the user has heard."""
        await self._connection.send(
            {"type": "output_audio.played", "response_id": response_id, "played_ms": played_ms}
        )

    async def resend(self, ws: ClientConnection, ready: dict[str, Any]) -> None:
        """After a resume, send the kept input chunks the server does not have."""
        have = ready.get("audio_in_seq")
        if not isinstance(have, int):
            return
        while frames := self.microphone.resend_after(have):
            for frame in frames:
                await ws.send(frame)
            # Chunks recorded during those sends are sent in the next round.
            have = self.microphone.next_seq - 1

    def play(self, event: dict[str, Any]) -> None:
        """Feed the simulated player; a barge-in stops it and reports where."""
        if self.player is None:
            return
        stopped = self.player.on_event(event, asyncio.get_running_loop().time())
        if stopped is not None:
            self._spawn_report(*stopped)

    async def _report_playback_loop(self, player: RealtimePlayer) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.playback_report_interval)
            due = player.due_report(loop.time())
            if due is not None and self._connection.connected:
                with contextlib.suppress(ClientError):
                    await self.report_playback(*due)

    def _spawn_report(self, response_id: str, played_ms: int) -> None:
        async def report() -> None:
            with contextlib.suppress(ClientError):
                await self.report_playback(response_id, played_ms)

        task = asyncio.get_running_loop().create_task(report())
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

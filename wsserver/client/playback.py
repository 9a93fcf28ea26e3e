"""Playback position of a response's audio, for clients that report what was heard.

A voice client tells the server how much of each answer it has played
(``output_audio.played``), so a barge-in keeps only what the user heard. A real
client reads that from its audio device. :class:`RealtimePlayer` is the stand-in
for one: it "plays" received audio at real-time speed from the moment the first
chunk arrives, never ahead of what arrived, and stops at a barge-in. The SDK uses
it when asked to simulate playback (tests, the CLI, load generators).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_KEPT_TRACKS = 4


@dataclass(slots=True)
class _Track:
    started_at: float
    received_ms: float = 0.0
    stopped_ms: float | None = None
    reported_ms: int = -1


class RealtimePlayer:
    """A real-time playback clock per response."""

    def __init__(self, sample_rate: int, *, stop_on_speech: bool = True) -> None:
        self.bytes_per_ms = sample_rate * 2 / 1000
        self.stop_on_speech = stop_on_speech
        """Stop when the user starts talking (the session has barge-in on)."""
        self._tracks: dict[str, _Track] = {}
        self.current: str | None = None
        """The response whose audio plays now."""

    def on_event(self, event: dict[str, Any], now: float) -> tuple[str, int] | None:
        """Follow a session event; returns (response, position) when a barge-in stopped it."""
        kind = event.get("type")
        if kind == "response.audio.delta":
            self.received(event["response_id"], event["audio"], now)
        elif kind == "input_audio.speech_started" and self.stop_on_speech and self.current:
            # The user talks over the answer: a player stops at once, before the
            # server's verdict, as a device would.
            self.stop(self.current, now)
        elif kind == "response.done" and event.get("status") == "interrupted":
            response_id = event["response_id"]
            if self.current == response_id:
                return response_id, self.stop(response_id, now)
        return None

    def received(self, response_id: str, audio: bytes, now: float) -> None:
        """Audio of a response arrived (queued behind what is already playing)."""
        track = self._tracks.get(response_id)
        if track is None:
            track = self._tracks[response_id] = _Track(now)
            self.current = response_id
            # Only the latest answer plays; a few older positions stay readable.
            while len(self._tracks) > _KEPT_TRACKS:
                del self._tracks[next(iter(self._tracks))]
        track.received_ms += len(audio) / self.bytes_per_ms

    def stop(self, response_id: str, now: float) -> int:
        """Playback of a response stops (barge-in): returns the position it stopped at."""
        track = self._tracks.get(response_id)
        if track is None:
            return 0
        if track.stopped_ms is None:
            track.stopped_ms = self._position(track, now)
        return int(track.stopped_ms)

    def played_ms(self, response_id: str, now: float) -> int:
        """How much of a response's audio has played by ``now``."""
        track = self._tracks.get(response_id)
        return 0 if track is None else int(self._position(track, now))

    def due_report(self, now: float) -> tuple[str, int] | None:
        """The current response's position, when it moved since the last report."""
        if self.current is None:
            return None
        track = self._tracks.get(self.current)
        if track is None:
            return None
        position = int(self._position(track, now))
        if position == track.reported_ms:
            return None
        track.reported_ms = position
        return self.current, position

    @staticmethod
    def _position(track: _Track, now: float) -> float:
        if track.stopped_ms is not None:
            return track.stopped_ms
        return min(track.received_ms, max(0.0, now - track.started_at) * 1000.0)

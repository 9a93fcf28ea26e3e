"""One voice session on the client side: what it sent when, and what it measured.

The client process's pacer writes the microphone chunks (see
:mod:`loadtest.voice.client`); a :class:`VoiceSession` remembers when each chunk
left, reads the server's events in the connection's callbacks (no task, no
await per frame) and turns them into samples:

- ``speech_ms``: deciding chunk sent -> ``input_audio.speech_started`` received;
- ``barge_done_ms``: deciding chunk sent -> the interrupting ``response.done``;
- ``barge_tail_ms``: deciding chunk sent -> the last audio frame of that answer
  (0 when none arrived after the chunk left);
- ``ping_ms``: ``ping`` sent (in the pacing tick, right after the session's
  chunk) -> ``pong``.

A sample counts when the chunk or ping it starts from was sent inside the window.
"""

from __future__ import annotations

import json
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loadtest.common.clients import Window
from loadtest.voice.audio import deciding_seq
from loadtest.voice.wire import VoiceConnection
from protocol.audio_frame import audio_event_from_frame

RING = 4096
"""Send times kept per session: 82 s of chunks, far more than any reaction may take."""
MATCH_MS = 20
"""A reported onset within one chunk of an expected one is that one."""
DELTA_PREFIX = '{"type":"response.text.delta"'


@dataclass(slots=True)
class VoiceTally:
    """What one client process observed; samples start inside the window."""

    speech_ms: list[float] = field(default_factory=list)
    speech_sent: list[float] = field(default_factory=list)
    """When each ``speech_ms`` sample's deciding chunk left (for the trend over the window)."""
    barge_done_ms: list[float] = field(default_factory=list)
    barge_tail_ms: list[float] = field(default_factory=list)
    barge_frames_after: int = 0
    ping_ms: list[float] = field(default_factory=list)
    expected_onsets: int = 0
    matched_onsets: int = 0
    unexpected_onsets: int = 0
    sessions_missing_onsets: int = 0
    barge_ins_owed: int = 0
    barge_ins_answered: int = 0
    unanswered_pings: int = 0
    dropped_sessions: int = 0
    late_decisions: int = 0
    """speech_started whose deciding chunk is no longer in the send-time ring."""
    errors: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    done: Counter[str] = field(default_factory=Counter)


class VoiceSession:
    """One connection's sends and receipts, measured against the window."""

    def __init__(
        self,
        connection: VoiceConnection,
        *,
        barge_in: bool,
        ping_every: int,
        ping_offset: int,
        loop_index: int,
        phase: int,
        onsets: tuple[int, ...],
        min_speech_ms: int,
        window: Window,
        tally: VoiceTally,
    ) -> None:
        self.connection = connection
        self.barge_in = barge_in
        self.ping_every = ping_every
        """Chunks between pings (0: this session does not ping)."""
        self.ping_offset = ping_offset
        self.loop_index = loop_index
        self.phase = phase
        self.min_speech_ms = min_speech_ms
        self.window = window
        self.tally = tally
        self.sent = array("d", bytes(8 * RING))
        self.next_seq = 0
        """Seq of the next chunk to send (all chunks below it have left)."""
        self.expected = {deciding_seq(ms, min_speech_ms): ms for ms in onsets}
        """Deciding seq -> audio_start_ms of each onset the detector should report."""
        self.heard: set[int] = set()
        self.pings: dict[str, float] = {}
        self.ping_count = 0
        self.active: str | None = None
        self.last_audio: dict[str, float] = {}
        self.barge_from: float | None = None
        """Send time of the chunk that decided on speech while an answer ran."""
        self.ended = False

    def start(self) -> None:
        """Take over the connection's callbacks."""
        self.connection.on_text = self.on_text
        self.connection.on_binary = self.on_binary
        self.connection.on_lost = self.on_lost

    # -- sending (called by the pacer) ------------------------------------------

    def sent_chunk(self, seq: int, at: float) -> None:
        """Chunk ``seq`` left at ``at``; maybe a ping goes right behind it."""
        self.sent[seq % RING] = at
        self.next_seq = seq + 1
        if self.ping_every and (seq + self.ping_offset) % self.ping_every == 0:
            self.ping_count += 1
            ping_id = f"p{self.ping_count}"
            self.pings[ping_id] = at
            self.connection.send_text(json.dumps({"type": "ping", "id": ping_id}))

    def ask(self) -> None:
        """A barge-in session's question: its answer streams audio until speech cuts it."""
        self.connection.send_text(json.dumps({"type": "response.create", "input": "tell me"}))

    def sent_at(self, seq: int) -> float | None:
        """When chunk ``seq`` left, if it did and is still remembered."""
        if seq >= self.next_seq or seq < self.next_seq - RING:
            return None
        return self.sent[seq % RING]

    # -- receiving ----------------------------------------------------------------

    def on_text(self, frame: str) -> None:
        """One event from the server."""
        if frame.startswith(DELTA_PREFIX):
            self.tally.events["response.text.delta"] += 1
            return
        message: dict[str, Any] = json.loads(frame)
        kind = str(message.get("type"))
        self.tally.events[kind] += 1
        now = time.monotonic()
        if kind == "input_audio.speech_started":
            self._on_speech(int(message["audio_start_ms"]), now)
        elif kind == "response.created":
            self.active = str(message["response_id"])
        elif kind == "response.done":
            self._on_done(message, now)
        elif kind == "pong":
            sent = self.pings.pop(str(message.get("request_id")), None)
            if sent is not None and self._in_window(sent):
                self.tally.ping_ms.append((now - sent) * 1000.0)
        elif kind == "error":
            self.tally.errors[str(message.get("code"))] += 1

    def on_binary(self, frame: bytes) -> None:
        """An audio frame of the running answer."""
        event = audio_event_from_frame(frame)
        self.tally.events["response.audio.delta"] += 1
        self.last_audio[str(event["response_id"])] = time.monotonic()

    def on_lost(self) -> None:
        """The connection dropped."""
        if not self.ended:
            self.tally.dropped_sessions += 1
        self.ended = True

    def _on_speech(self, audio_start_ms: int, now: float) -> None:
        seq = deciding_seq(audio_start_ms, self.min_speech_ms)
        expected = self._match(audio_start_ms)
        if expected is None:
            self.tally.unexpected_onsets += 1
        else:
            self.heard.add(expected)
        sent = self.sent_at(seq)
        if sent is None:
            self.tally.late_decisions += 1
            return
        if self._in_window(sent):
            self.tally.speech_ms.append((now - sent) * 1000.0)
            self.tally.speech_sent.append(sent)
        if self.barge_in and self.active is not None:
            # The server interrupts the running answer on this speech: a done must follow.
            self.barge_from = sent

    def _match(self, audio_start_ms: int) -> int | None:
        """The deciding seq of the expected onset this reported one is."""
        for seq, ms in self.expected.items():
            if abs(ms - audio_start_ms) <= MATCH_MS and seq not in self.heard:
                return seq
        return None

    def _on_done(self, message: dict[str, Any], now: float) -> None:
        status = f"{message.get('status')}/{message.get('reason')}"
        self.tally.done[status] += 1
        response_id = str(message.get("response_id"))
        if self.active == response_id:
            self.active = None
        last_audio = self.last_audio.pop(response_id, None)
        sent, self.barge_from = self.barge_from, None
        if sent is None or not self._in_window(sent):
            return
        self.tally.barge_ins_owed += 1
        if status != "interrupted/speech":
            return
        self.tally.barge_ins_answered += 1
        self.tally.barge_done_ms.append((now - sent) * 1000.0)
        tail = 0.0 if last_audio is None else max(0.0, (last_audio - sent) * 1000.0)
        self.tally.barge_tail_ms.append(tail)
        if tail > 0:
            self.tally.barge_frames_after += 1

    # -- the end ---------------------------------------------------------------

    def _in_window(self, t: float) -> bool:
        return self.window.start <= t < self.window.end

    def _owed_onsets(self) -> list[int]:
        """Expected onsets decided by a chunk sent in the window."""
        owed = []
        for seq in self.expected:
            sent = self.sent_at(seq)
            if sent is not None and self._in_window(sent):
                owed.append(seq)
        return owed

    def owes(self) -> bool:
        """Whether something sent in the window still waits for its answer."""
        if self.ended:
            return False
        if self.barge_from is not None or any(self._in_window(t) for t in self.pings.values()):
            return True
        return any(seq not in self.heard for seq in self._owed_onsets())

    def settle(self) -> None:
        """Add what this session expected, and what never came, to the tally (once)."""
        tally = self.tally
        owed = self._owed_onsets()
        heard = sum(1 for seq in owed if seq in self.heard)
        tally.expected_onsets += len(owed)
        tally.matched_onsets += heard
        if heard < len(owed):
            tally.sessions_missing_onsets += 1
        tally.unanswered_pings += sum(1 for t in self.pings.values() if self._in_window(t))
        if self.barge_from is not None and self._in_window(self.barge_from):
            tally.barge_ins_owed += 1
        self.pings.clear()
        self.barge_from = None
        self.ended = True

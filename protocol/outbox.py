"""The outbox: session events waiting to be sent, merged while the client lags."""

from __future__ import annotations

from collections import deque
from typing import TypeVar

from protocol.events import OUTPUT_JSON_DELTA, TOOL_CALL_DELTA, AudioDelta, Event, TextDelta
from protocol.replay import EVENT_MEMORY_BYTES, memory_of

MAX_MERGED_BYTES = 16 * 1024
"""A merged delta stops growing here, so one frame (and one replay entry) stays small."""
_Delta = TypeVar("_Delta", TextDelta, AudioDelta)
_PROVISIONAL = frozenset({TOOL_CALL_DELTA, OUTPUT_JSON_DELTA})
"""Events a stopped response's client never needs: partial arguments and partial JSON."""

MAX_MERGED_AUDIO_BYTES = 64 * 1024
"""A merged audio chunk stops growing here (2 s at 16 kHz)."""

_MAX_PIECES = 16
"""A merged delta joins its pieces when it holds this many: one small string per
token would cost ten times the token's text (the bound would not bound memory)."""


class Outbox:
    """Unsent session events in order.

    Text deltas of one response that queue up behind each other are merged into
    the tail delta, so a lagging client gets fewer, larger frames and no text is
    ever dropped. Events are numbered only when they leave (``pop``), so merging
    never leaves a hole in ``seq``. The byte count lets the owner enforce the
    per-connection hard bound; it is the approximate memory the queued events
    hold (:func:`protocol.replay.memory_of`), their text or audio included.
    """

    __slots__ = ("_queue", "merged", "nbytes", "peak_bytes")

    def __init__(self) -> None:
        self._queue: deque[Event] = deque()
        self.nbytes = 0
        self.peak_bytes = 0
        self.merged = 0
        """How many deltas were folded into an earlier one."""

    def __len__(self) -> int:
        return len(self._queue)

    def __bool__(self) -> bool:
        return bool(self._queue)

    def push(self, event: Event) -> None:
        """Queue any event."""
        self._queue.append(event)
        self._grow(memory_of(event))

    def push_text(self, response_id: str, text: str, tokens: int) -> None:
        """Queue a text delta, merging it into a queued delta of the same response."""
        queue = self._queue
        # A reader that keeps up leaves the queue empty: nothing to merge into.
        if queue:
            target = self._merge_target(TextDelta, response_id, MAX_MERGED_BYTES)
            if target is not None:
                target.merge(text, tokens)
                if len(target.parts) >= _MAX_PIECES:
                    target.parts[:] = ["".join(target.parts)]
                self.merged += 1
                self._grow(len(text))
                return
        delta = TextDelta(response_id, text, tokens)
        queue.append(delta)
        self._grow(delta.size + EVENT_MEMORY_BYTES)  # memory_of(delta), once per token

    def push_audio(
        self, response_id: str, stream_id: int, audio: bytes, duration_ms: float
    ) -> None:
        """Queue a chunk of audio output, merging it into a queued chunk of the response."""
        target = self._merge_target(AudioDelta, response_id, MAX_MERGED_AUDIO_BYTES)
        if target is not None:
            target.merge(audio, duration_ms)
            if len(target.chunks) >= _MAX_PIECES:
                target.chunks[:] = [b"".join(target.chunks)]
            self.merged += 1
            self._grow(len(audio))
            return
        self.push(AudioDelta(response_id, stream_id, audio, duration_ms))

    def _merge_target(self, kind: type[_Delta], response_id: str, max_bytes: int) -> _Delta | None:
        """The queued delta of ``kind`` a new one may join, if any.

        A response's text and audio alternate (a word, then its sound). Text may
        join the delta before a queued audio chunk (text moves ahead of audio,
        which is harmless); audio joins only the tail, so a word's sound never
        leaves before its text and a cut at the played position keeps the text.
        """
        queue = self._queue
        for back in (1, 2) if kind is TextDelta else (1,):
            if len(queue) < back:
                return None
            candidate = queue[-back]
            if candidate.response_id != response_id:
                return None
            if type(candidate) is kind:
                return candidate if candidate.size < max_bytes else None
            if type(candidate) not in (TextDelta, AudioDelta):
                return None
        return None

    def pending(self) -> list[Event]:
        """The queued events, oldest first (not removed)."""
        return list(self._queue)

    def pop(self) -> Event | None:
        """The next event to send, or ``None``."""
        if not self._queue:
            return None
        event = self._queue.popleft()
        self.nbytes -= event.size + EVENT_MEMORY_BYTES  # memory_of(event), once per frame
        return event

    def drop_response(self, response_id: str) -> int:
        """Remove every queued delta of a response; returns the dropped token count."""
        kept: deque[Event] = deque()
        dropped = 0
        for event in self._queue:
            provisional = isinstance(event, TextDelta | AudioDelta) or event.type in _PROVISIONAL
            if provisional and event.response_id == response_id:
                dropped += event.tokens
                self.nbytes -= memory_of(event)
            else:
                kept.append(event)
        self._queue = kept
        return dropped

    def _grow(self, n: int) -> None:
        self.nbytes += n
        if self.nbytes > self.peak_bytes:
            self.peak_bytes = self.nbytes

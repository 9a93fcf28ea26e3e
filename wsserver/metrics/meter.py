"""Times one session's responses: first token, token gaps, stop and barge-in latency.

One :class:`SessionMeter` per session runtime; the runtime calls it at the points
where these things happen. Per token it does one observe (at the runtime's clock read) on a
histogram without labels; everything else happens once per response or message.
With ``--metrics off`` every runtime shares :data:`NO_METER`, whose calls do nothing.
"""

from __future__ import annotations

from time import monotonic

from prometheus_client import Histogram

from wsserver.metrics.token_gaps import LoopHistogram

_NEVER = -1.0


class NoMeter:
    """The meter of ``--metrics off``: every call returns at once."""

    __slots__ = ()

    def generation_started(self) -> None:
        """An engine request was submitted."""

    def chunk(self, now: float) -> None:
        """The running engine request produced a chunk at ``now`` (``time.monotonic``;
        once per token, so the caller's clock read is shared)."""

    def stop_requested(self, kind: str) -> None:
        """The client asked to stop the running response (``interrupt``/``cancel``)."""

    def speech_started(self) -> None:
        """Server VAD heard speech while a response ran (barge-in)."""

    def done_sent(self) -> None:
        """A ``response.done`` left for the client."""

    def transport_attached(self) -> None:
        """A connection (a resume's) took the session: a done owed is now a replay."""


NO_METER = NoMeter()


class SessionMeter(NoMeter):
    """The meter of one session with metrics on."""

    __slots__ = (
        "_barge_in",
        "_inter_token",
        "_last",
        "_speech_at",
        "_start",
        "_stop",
        "_stop_at",
        "_stop_kind",
        "_ttft",
    )

    def __init__(
        self, ttft: Histogram, inter_token: LoopHistogram, stop: Histogram, barge_in: Histogram
    ) -> None:
        self._ttft = ttft
        self._inter_token = inter_token
        self._stop = stop
        self._barge_in = barge_in
        self._start = _NEVER
        self._last = _NEVER
        self._stop_at = _NEVER
        self._stop_kind = ""
        self._speech_at = _NEVER

    def generation_started(self) -> None:
        self._start = monotonic()
        self._last = _NEVER

    def chunk(self, now: float) -> None:
        last = self._last
        if last != _NEVER:
            self._inter_token.observe(now - last)
        elif self._start != _NEVER:
            self._ttft.observe(now - self._start)
        self._last = now

    def stop_requested(self, kind: str) -> None:
        if self._stop_at == _NEVER:  # the first request counts: later ones wait on it
            self._stop_at = monotonic()
            self._stop_kind = kind

    def speech_started(self) -> None:
        if self._speech_at == _NEVER:
            self._speech_at = monotonic()

    def transport_attached(self) -> None:
        # A stop or speech whose done did not leave before the connection went is no
        # reaction time: timed, the next answer's done would count from it.
        self._stop_at = self._speech_at = _NEVER

    def done_sent(self) -> None:
        # No output of a response follows its response.done: the done's departure is
        # when the last frame the user could hear or see left.
        now = monotonic()
        if self._stop_at != _NEVER:
            self._stop.labels(self._stop_kind).observe(now - self._stop_at)
            self._stop_at = _NEVER
        if self._speech_at != _NEVER:
            self._barge_in.observe(now - self._speech_at)
            self._speech_at = _NEVER
        self._start = self._last = _NEVER

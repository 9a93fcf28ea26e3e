"""One session's telemetry: response timings, and the end lines (and spans) with usage.

The runtime calls it at four points: an engine request starts, output arrives
(once per chunk: a comparison until the first one), a response's usage is
settled, the session ends. Only the two ends write anything.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from protocol.session.responses import ResponseState
from protocol.session.state import ServerSession
from protocol.usage import Usage
from wsserver.telemetry.formatters import FIELDS_ATTRIBUTE
from wsserver.telemetry.spans import ResponseSpan
from wsserver.telemetry.state import PROCESS
from wsserver.telemetry.tracing import ResponseTracer

log = logging.getLogger("wsserver.telemetry")

MAX_TIMED_RESPONSES = 64
"""Responses of one session timed at once (more are ended without times, never kept)."""


@dataclass(slots=True)
class _Timing:
    started: float
    started_ns: int
    first_output_ns: int | None = None
    first_output: float | None = None


class SessionTelemetry:
    """The timings of one session's responses, and its end lines."""

    __slots__ = ("_awaiting", "_timings", "departure", "responses", "session_id", "started")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.started = time.monotonic()
        self.responses = 0
        self._timings: dict[str, _Timing] = {}
        self._awaiting: str | None = None
        self.departure: str | None = None
        """How the last transport went away (``client_closed``, a close code's name)."""

    def generation_started(self, response_id: str) -> None:
        """An engine request of ``response_id`` started (its first one starts the clock)."""
        if response_id in self._timings or len(self._timings) >= MAX_TIMED_RESPONSES:
            return
        self._timings[response_id] = _Timing(time.monotonic(), time.time_ns())
        self._awaiting = response_id

    def output(self, response_id: str) -> None:
        """Engine output of ``response_id``: the first one is its time to first token."""
        if self._awaiting != response_id:
            return  # the common case, once per token: one comparison
        self._awaiting = None
        timing = self._timings[response_id]
        timing.first_output = time.monotonic()
        timing.first_output_ns = time.time_ns()

    def response_ended(self, response: ResponseState) -> None:
        """``response`` ended and its usage is final: one line, and a span if traced."""
        timing = self._timings.pop(response.id, None)
        if self._awaiting == response.id:
            self._awaiting = None
        self.responses += 1
        now = time.monotonic()
        status = response.status.value if response.status else "unknown"
        ttft_ms = duration_ms = None
        if timing is not None:
            duration_ms = round((now - timing.started) * 1000, 1)
            if timing.first_output is not None:
                ttft_ms = round((timing.first_output - timing.started) * 1000, 1)
        usage = response.usage()
        fields = {
            "event": "response.end",
            "session_id": self.session_id,
            "response_id": response.id,
            "status": status,
            "reason": response.reason,
            "input_tokens": usage.input_tokens,
            "output_tokens_generated": usage.output_tokens_generated,
            "output_tokens_delivered": usage.output_tokens_delivered,
            "ttft_ms": ttft_ms,
            "duration_ms": duration_ms,
            "engine": PROCESS.engine or None,
        }
        log.info("response %s", status, extra={FIELDS_ATTRIBUTE: fields})
        tracer = PROCESS.tracer
        if tracer is not None and timing is not None:
            self._trace(tracer, response, status, usage, timing, ttft_ms)

    def _trace(
        self,
        tracer: ResponseTracer,
        response: ResponseState,
        status: str,
        usage: Usage,
        timing: _Timing,
        ttft_ms: float | None,
    ) -> None:
        # Called where the session's writer settles usage: a tracing fault must not end it.
        try:
            tracer.record(
                ResponseSpan(
                    worker=PROCESS.worker_id,
                    session_id=self.session_id,
                    response_id=response.id,
                    status=status,
                    reason=response.reason,
                    engine=PROCESS.engine,
                    model=PROCESS.model,
                    input_tokens=usage.input_tokens,
                    generated_tokens=usage.output_tokens_generated,
                    delivered_tokens=usage.output_tokens_delivered,
                    ttft_ms=ttft_ms,
                    start_ns=timing.started_ns,
                    first_output_ns=timing.first_output_ns,
                    end_ns=time.time_ns(),
                )
            )
        except Exception as exc:
            log.warning("span of %s not recorded: %s", response.id, exc)

    def session_ended(self, reason: str, session: ServerSession) -> None:
        """The session is over on this worker (``reason``: ended, expired, moved)."""
        usage = session.usage
        fields = {
            "event": "session.end",
            "session_id": self.session_id,
            "reason": reason,
            "departure": self.departure,
            "responses": self.responses,
            "input_tokens": usage.input_tokens,
            "output_tokens_generated": usage.output_tokens_generated,
            "output_tokens_delivered": usage.output_tokens_delivered,
            "output_tokens_wasted": usage.output_tokens_wasted,
            "duration_ms": round((time.monotonic() - self.started) * 1000, 1),
        }
        self._timings.clear()
        self._awaiting = None
        log.info("session %s", reason, extra={FIELDS_ATTRIBUTE: fields})

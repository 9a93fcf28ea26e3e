"""What a response's span says, as plain data (no OpenTelemetry type here)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResponseSpan:
    """One ended response, for :meth:`wsserver.telemetry.tracing.ResponseTracer.record`."""

    worker: str
    session_id: str
    response_id: str
    status: str
    reason: str | None
    engine: str
    model: str
    input_tokens: int
    generated_tokens: int
    delivered_tokens: int
    ttft_ms: float | None
    start_ns: int
    first_output_ns: int | None
    end_ns: int

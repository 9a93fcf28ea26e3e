"""The OpenTelemetry implementation of :class:`ResponseTracer` (the otel extra).

Each response becomes one span, made when it ends with its real start time, so
nothing is held open while it runs: ``wsserver.response`` with the engine,
model, outcome, TTFT and token counts, and events for the first token and an
interrupt. Spans are batched and sent over OTLP/HTTP with protobuf.
"""

from __future__ import annotations

import threading

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from wsserver.telemetry.spans import ResponseSpan

SPAN_NAME = "wsserver.response"

SHUTDOWN_BOUND_S = 3.0
"""Longest the last batch may hold a stopping worker: a collector that hangs would
otherwise keep it for the exporter's timeout (10 s, or whatever OTEL_* says) plus its
retries, past a pod's grace period. Spans not sent by then are dropped."""


def _traces_url(endpoint: str) -> str:
    """The standard variable names the collector's root; the exporter wants /v1/traces."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith("/v1/traces") else endpoint + "/v1/traces"


class OtelResponseTracer:
    """Spans of ended responses, exported in batches over OTLP/HTTP."""

    def __init__(self, endpoint: str, *, service_name: str) -> None:
        resource = Resource.create({"service.name": service_name})
        self._provider = TracerProvider(resource=resource)
        self._provider.add_span_processor(
            # A second between exports: spans show up soon, at most one request a second.
            BatchSpanProcessor(
                OTLPSpanExporter(endpoint=_traces_url(endpoint)), schedule_delay_millis=1000
            )
        )
        self._tracer = self._provider.get_tracer("wsserver")

    def record(self, span: ResponseSpan) -> None:
        """Make and end the response's span now, with the times it really had."""
        attributes: dict[str, str | int | float] = {
            "wsserver.worker": span.worker,
            "wsserver.session_id": span.session_id,
            "wsserver.response_id": span.response_id,
            "wsserver.engine": span.engine,
            "wsserver.model": span.model,
            "wsserver.status": span.status,
            "wsserver.input_tokens": span.input_tokens,
            "wsserver.output_tokens_generated": span.generated_tokens,
            "wsserver.output_tokens_delivered": span.delivered_tokens,
        }
        if span.reason is not None:
            attributes["wsserver.reason"] = span.reason
        if span.ttft_ms is not None:
            attributes["wsserver.ttft_ms"] = span.ttft_ms
        otel_span = self._tracer.start_span(
            SPAN_NAME, kind=SpanKind.SERVER, attributes=attributes, start_time=span.start_ns
        )
        if span.first_output_ns is not None:
            otel_span.add_event("first_token", timestamp=span.first_output_ns)
        if span.status == "interrupted":
            otel_span.add_event("interrupt", timestamp=span.end_ns)
        if span.status == "failed":
            otel_span.set_status(Status(StatusCode.ERROR, span.reason or "failed"))
        otel_span.end(end_time=span.end_ns)

    def shutdown(self) -> None:
        """Flush the batch and stop the exporter, waiting at most :data:`SHUTDOWN_BOUND_S`."""
        # The SDK's shutdown waits for an export in flight without a bound; a daemon
        # thread left behind does not keep the process alive.
        stopping = threading.Thread(
            target=self._provider.shutdown, name="otlp-shutdown", daemon=True
        )
        stopping.start()
        stopping.join(SHUTDOWN_BOUND_S)

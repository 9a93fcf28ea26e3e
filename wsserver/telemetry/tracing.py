"""Traces, when configured: the interface the sessions use, and starting the exporter.

OpenTelemetry is optional (``pip install 'wsserver[otel]'``) and imported here
only when an endpoint is configured: without one, no import and no cost.
"""

from __future__ import annotations

import os
import re
from typing import Protocol

from wsserver.telemetry.errors import TelemetryConfigError
from wsserver.telemetry.spans import ResponseSpan

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"
"""The standard variable; ``--otlp-endpoint`` wins over it."""


class ResponseTracer(Protocol):
    """Turns ended responses into spans and exports them."""

    def record(self, span: ResponseSpan) -> None:
        """Export one response's span (never blocks: batched in the background)."""
        ...

    def shutdown(self) -> None:
        """Export what is buffered, then stop."""
        ...


def otlp_endpoint(configured: str) -> str:
    """The OTLP endpoint in use: the setting, else the standard variable ('' = off)."""
    return configured or os.environ.get(ENDPOINT_VARIABLE, "")


def shown(endpoint: str) -> str:
    """``endpoint`` fit to print: no ``user:password@``, at most 100 characters."""
    return re.sub(r"^((?:[A-Za-z][\w+.-]*:)?//)?[^/@]*@", r"\1***@", endpoint)[:100]


def start_tracing(endpoint: str, *, service_name: str) -> ResponseTracer:
    """Export spans over OTLP/HTTP (protobuf) to ``endpoint``; needs the otel extra."""
    if not endpoint.startswith(("http://", "https://")):
        raise TelemetryConfigError(
            f"the otlp endpoint must be an http:// or https:// url, not {shown(endpoint)!r}"
        )
    try:
        from wsserver.telemetry.otel import OtelResponseTracer
    except ImportError as exc:
        raise TelemetryConfigError(
            f"an otlp endpoint is configured ({shown(endpoint)}) but opentelemetry is not "
            "installed: pip install 'wsserver[otel]', or unset --otlp-endpoint and "
            f"{ENDPOINT_VARIABLE}"
        ) from exc
    return OtelResponseTracer(endpoint, service_name=service_name)

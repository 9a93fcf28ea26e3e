"""Telemetry: structured logs (JSON lines or a human format) and optional traces.

Nothing here decides anything about a session: the runtime tells it when a
response starts, shows its first output and ends, and when the session ends;
it writes one log line for each end and, when traces are configured, one span
per response. OpenTelemetry is imported only when an OTLP endpoint is set.
"""

from __future__ import annotations

from wsserver.telemetry.context import bind_session, response_context
from wsserver.telemetry.errors import TelemetryConfigError
from wsserver.telemetry.logging_setup import LOG_FORMATS, configure_logging
from wsserver.telemetry.session_telemetry import SessionTelemetry
from wsserver.telemetry.state import configure_worker

__all__ = [
    "LOG_FORMATS",
    "SessionTelemetry",
    "TelemetryConfigError",
    "bind_session",
    "configure_logging",
    "configure_worker",
    "response_context",
]

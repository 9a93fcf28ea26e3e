"""The telemetry package's one exception tree."""

from __future__ import annotations


class TelemetryError(Exception):
    """Base of the telemetry package's errors."""


class TelemetryConfigError(TelemetryError):
    """The telemetry configuration cannot be used (the CLI exits 2 with its message)."""

"""Configure the process's logging: one handler on stderr, the chosen format, redaction."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from wsserver.frontdoor.redaction import install_redaction
from wsserver.telemetry.formatters import HumanFormatter, JsonFormatter

LOG_FORMATS = ("auto", "json", "human")
"""``auto``: human on a terminal, JSON lines otherwise (a container, a file, a pipe)."""


def resolve_format(log_format: str, stream: TextIO) -> str:
    """``json`` or ``human`` for ``log_format`` on ``stream``."""
    if log_format == "auto":
        isatty = getattr(stream, "isatty", None)
        return "human" if isatty is not None and isatty() else "json"
    return log_format


def configure_logging(level: str, log_format: str = "auto", stream: TextIO | None = None) -> str:
    """Replace the root logger's handlers with one writing ``log_format``; the format used."""
    stream = sys.stderr if stream is None else stream
    chosen = resolve_format(log_format, stream)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if chosen == "json" else HumanFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The formatters redact every field themselves; the filter also scrubs the record
    # for any handler added later.
    install_redaction()
    return chosen

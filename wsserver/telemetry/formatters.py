"""The two line formats: JSON lines for machines, one readable line for a terminal.

Both write one line per record, whatever the record holds: every string goes
through :func:`wsserver.telemetry.sanitize.clean` (redaction, valid UTF-8,
bounded), and the human format writes controls visibly, so a newline a client
put in a field cannot start a forged line.
"""

from __future__ import annotations

import functools
import json
import logging
import reprlib
from datetime import UTC, datetime
from typing import Any

from wsserver.telemetry.context import RESPONSE_ID, SESSION_ID
from wsserver.telemetry.sanitize import MAX_MESSAGE_CHARS, clean, escape_controls
from wsserver.telemetry.state import PROCESS

FIELDS_ATTRIBUTE = "wsserver_fields"
"""The record attribute (``extra={FIELDS_ATTRIBUTE: {...}}``) holding a line's own fields."""

MAX_FIELDS = 64
"""Fields kept from one record's extra fields."""


def _ids(record: logging.LogRecord) -> tuple[str | None, str | None]:
    """The session and response of a record: given with it, else the context's."""
    fields = getattr(record, FIELDS_ATTRIBUTE, None) or {}
    session = fields.get("session_id") or SESSION_ID.get()
    response = fields.get("response_id") or RESPONSE_ID.get()
    return session, response


MAX_DEPTH = 4
"""Nesting kept in a field value (deeper parts are written as text)."""


def _value(value: Any, depth: int = 0) -> Any:
    """A JSON-safe, bounded copy of a field value."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth < MAX_DEPTH and isinstance(value, dict):
        items = list(value.items())[:MAX_FIELDS]
        return {clean(str(k), 128): _value(v, depth + 1) for k, v in items}
    if depth < MAX_DEPTH and isinstance(value, list | tuple):
        return [_value(v, depth + 1) for v in value[:MAX_FIELDS]]
    return clean(reprlib.repr(value) if isinstance(value, dict | list | tuple) else str(value))


@functools.lru_cache(maxsize=512)
def _key(key: str) -> str:
    """A field name, cleaned once: the same few names come with every line."""
    return clean(key, 64)


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    """Everything one line says, as plain data: the common fields, then the record's own."""
    session, response = _ids(record)
    out: dict[str, Any] = {
        "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
        "level": record.levelname,
        "logger": record.name,
        "message": clean(record.getMessage(), MAX_MESSAGE_CHARS),
        "worker": PROCESS.worker_id or None,
        "session_id": clean(session, 128) if session else None,
        "response_id": clean(response, 128) if response else None,
    }
    own = getattr(record, FIELDS_ATTRIBUTE, None) or {}
    for key, value in list(own.items())[:MAX_FIELDS]:
        key = _key(key) if isinstance(key, str) else clean(str(key), 64)
        if key not in out:
            out[key] = _value(value)
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        out["exception"] = clean(record.exc_text, MAX_MESSAGE_CHARS)
    return {k: v for k, v in out.items() if v is not None}


class JsonFormatter(logging.Formatter):
    """One JSON object per line (``ensure_ascii``: a line is always one line of ASCII)."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(record_fields(record), ensure_ascii=True, separators=(",", ":"))


class HumanFormatter(logging.Formatter):
    """``TIME LEVEL logger [session/response]: message key=value ...`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        fields = record_fields(record)
        ts = fields.pop("ts")[11:23]  # the time of day, to the millisecond
        level, name, message = fields.pop("level"), fields.pop("logger"), fields.pop("message")
        fields.pop("worker", None)  # the same on every line of a process
        ids = "/".join(fields.pop(k) for k in ("session_id", "response_id") if k in fields)
        exception = fields.pop("exception", None)
        rest = " ".join(f"{k}={_short(v)}" for k, v in fields.items())
        line = f"{ts} {level} {name}{f' [{ids}]' if ids else ''}: {message}"
        if rest:
            line += " " + rest
        line = escape_controls(line)
        if exception:
            # A traceback keeps its lines, each indented: no line of it looks like a record.
            body = "\n".join("    " + escape_controls(x) for x in exception.splitlines())
            line += "\n" + body
        return line


def _short(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)

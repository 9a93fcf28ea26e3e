"""Secrets never reach a log: a filter on every handler scrubs what looks like one.

The code never logs credentials or resume tokens in the first place; this is the
second line, for what a library logs at debug level (request headers, frames).
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"

_PATTERNS = (
    # Authorization: Bearer <anything>, and the subprotocol form.
    (re.compile(r"(?i)(bearer\s+)[^\s,'\"]+"), r"\1" + REDACTED),
    (re.compile(r"(wsserver\.token\.)[^\s,'\"]+"), r"\1" + REDACTED),
    # API keys, client tokens, resume tokens by their prefixes, wherever they start: a
    # word boundary would let one glued to a name through (``API_KEY_wsk_...``).
    (re.compile(r"(wsk_|wct_|wrt_)[A-Za-z0-9_.\-]+"), r"\1" + REDACTED),
    # JWTs: three base64url parts, the first a JSON object.
    (re.compile(r"eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*"), REDACTED),
    # Resume tokens inside a logged frame.
    (re.compile(r"(resume_token[\"']?\s*[:=]\s*[\"']?)[^\s,'\"}]+"), r"\1" + REDACTED),
)


def redact(text: str) -> str:
    """``text`` with every credential-looking part replaced."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites each record's message (and traceback) with :func:`redact`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = redact(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def install_redaction() -> None:
    """Put the filter on every handler of the root logger (after ``basicConfig``)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())

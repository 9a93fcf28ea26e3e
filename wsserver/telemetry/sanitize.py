"""Make a value safe to put in a log line: no secrets, valid text, bounded size.

A client controls some of what reaches a log (a response id, a reason, a model's
error text): it must not forge a line (a newline), break the encoding (a lone
surrogate) or fill the disk (a megabyte string).
"""

from __future__ import annotations

import re

from wsserver.frontdoor.redaction import REDACTED, redact

MAX_FIELD_CHARS = 2048
"""Longest string field kept in a line; the rest is cut with a marker."""
MAX_MESSAGE_CHARS = 8192
"""Longest message (and traceback) kept in a line."""

MIN_SECRET_CHARS = 8
"""Shorter configured values are not secrets worth the name (and would match everywhere)."""

_known_secrets: set[str] = set()


def register_secret(value: str) -> None:
    """A configured credential (an upstream's API key): never written in a line.

    Such keys have no prefix :func:`redact` knows, so their values are looked for.
    """
    if len(value) >= MIN_SECRET_CHARS:
        _known_secrets.add(value)


# Every pattern of wsserver.frontdoor.redaction starts with one of these (checked by a test).
_MAYBE_SECRET = re.compile(r"(?i)bearer|wsserver\.token\.|wsk_|wct_|wrt_|eyJ|resume_token")

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators: each can
# start a new line in some viewer.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def clean(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    """``text`` redacted, with invalid code points replaced, and cut to ``limit`` chars."""
    # Redacted whole first: a cut must not leave the tail of a secret unrecognized.
    # Most strings hold nothing like one: one search instead of every pattern's pass.
    if _MAYBE_SECRET.search(text):
        text = redact(text)
    for secret in _known_secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    if len(text) > limit:
        text = f"{text[:limit]}...[{len(text) - limit} more chars]"
    # A lone surrogate cannot be written as UTF-8: it becomes "?".
    return text.encode("utf-8", "replace").decode("utf-8")


def escape_controls(text: str) -> str:
    """Controls written visibly (``\\n``, ``\\x1b``), for one-line human output."""
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return named.get(char) or f"\\u{ord(char):04x}"

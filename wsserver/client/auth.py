"""Credentials of the client SDK: how they travel in the handshake, and staying out of logs.

An API key (or a JWT: same place) goes in the ``Authorization: Bearer`` header. A client
token (minted for a browser or app by its backend) goes as an extra WebSocket subprotocol
entry ``wsserver.token.<token>``, offered after the encoding, because a browser cannot set
headers and a URL query ends up in proxy logs.
"""

from __future__ import annotations

import email.utils
import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from websockets.frames import Frame
from websockets.typing import Subprotocol

from protocol.encoding import TOKEN_SUBPROTOCOL_PREFIX

API_KEY_ENV = "WSSERVER_API_KEY"
CLIENT_TOKEN_ENV = "WSSERVER_CLIENT_TOKEN"

# RFC 7230 token characters: what a Sec-WebSocket-Protocol entry may hold.
_TOKEN_CHARS = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Header values: visible ASCII and spaces; a CR or LF would split the request.
_HEADER_VALUE = re.compile(r"[\x21-\x7e]+")
_MAX_RETRY_AFTER = 60.0
"""Seconds: a Retry-After beyond this is treated as this (a bad proxy cannot park us)."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """What the client presents in its handshake; ``repr`` never shows the values."""

    api_key: str | None = field(default=None, repr=False)
    client_token: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(cls, api_key: str | None, client_token: str | None) -> Credentials:
        """The given values, else ``WSSERVER_API_KEY`` / ``WSSERVER_CLIENT_TOKEN``."""
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        token = client_token if client_token is not None else os.environ.get(CLIENT_TOKEN_ENV)
        credentials = cls(key or None, token or None)
        credentials.check()
        return credentials

    def check(self) -> None:
        """Refuse values the handshake cannot carry (the message never shows them)."""
        if self.api_key is not None and not _HEADER_VALUE.fullmatch(self.api_key):
            raise ValueError("api key holds characters a header cannot carry")
        if self.client_token is not None and not _TOKEN_CHARS.fullmatch(self.client_token):
            raise ValueError("client token holds characters a subprotocol cannot carry")

    def headers(self) -> list[tuple[str, str]]:
        """Extra handshake headers."""
        return [("Authorization", f"Bearer {self.api_key}")] if self.api_key else []

    def subprotocols(self, encoding: str) -> list[Subprotocol]:
        """The subprotocols to offer: the encoding first, then the token entry."""
        offered = [Subprotocol(encoding)]
        if self.client_token:
            offered.append(Subprotocol(TOKEN_SUBPROTOCOL_PREFIX + self.client_token))
        return offered

    def secrets(self) -> tuple[str, ...]:
        """The values a log must never show."""
        return tuple(s for s in (self.api_key, self.client_token) if s)

    def __repr__(self) -> str:
        key = "set" if self.api_key else None
        token = "set" if self.client_token else None
        return f"Credentials(api_key={key}, client_token={token})"


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) as seconds, bounded; None if absent."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), _MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    wait = when.timestamp() - (time.time() if now is None else now)
    return min(max(wait, 0.0), _MAX_RETRY_AFTER)


_RESUME_TOKEN_JSON = re.compile(r'("resume_token"\s*:\s*")[^"]*')


class RedactingLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """The websockets library's logger, with keys, tokens and resume tokens blanked.

    At debug level the library logs every handshake header and the start of every
    frame; the ``Authorization`` header, the token subprotocol and the resume token in
    ``session.resume`` / ``session.ready`` would land in the application's logs.
    """

    def __init__(self, logger: logging.Logger, secrets: Callable[[], Iterable[str]]) -> None:
        super().__init__(logger, {})
        self._secrets = secrets

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        """Log with every argument that could show a secret redacted."""
        if not self.isEnabledFor(level):
            return
        secrets = [s for s in self._secrets() if s]
        clean = tuple(_redact(arg, secrets) for arg in args)
        self.logger.log(level, _redact(msg, secrets), *clean, **kwargs)


def _redact(value: object, secrets: list[str]) -> object:
    if isinstance(value, Frame):
        data = bytes(value.data)
        if b"resume_token" in data or any(s.encode() in data for s in secrets):
            return f"{value.opcode.name} [redacted, {len(data)} bytes]"
        return value
    if not isinstance(value, str):
        return value
    for secret in secrets:
        value = value.replace(secret, "[redacted]")
    return _RESUME_TOKEN_JSON.sub(r"\1[redacted]", value)

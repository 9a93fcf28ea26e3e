"""The Origin allowlist: refuse cross-site WebSocket hijacking.

A browser attaches its page's ``Origin`` to every WebSocket handshake, and a
hostile page can open a WebSocket to any server the browser can reach (with the
user's cookies, or from inside their network). So a handshake that carries an
``Origin`` is accepted only from an allowed origin:

- a list of origins: exact matches of ``scheme://host[:port]`` (case-insensitive,
  the default port of the scheme may be written or not);
- the empty list (the default): loopback pages only — ``http``/``https`` on
  ``localhost``, ``127.0.0.0/8`` or ``[::1]``, any port — enough for a demo page
  on the developer's machine, and no site on the internet;
- ``*``: any origin (for servers that authenticate every connection with a
  credential a hostile page cannot have).

A handshake without ``Origin`` is not from a browser page (the SDK, curl, another
server) and is not subject to the list. ``Origin: null`` (sandboxed frames, local
files) matches only when ``null`` is listed.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

ANY = "*"
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def normalize_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` in canonical form, or ``None`` if it is not an origin."""
    origin = origin.strip()
    if origin.lower() == "null":
        return "null"
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if (
        not parts.scheme
        or not host
        or parts.username is not None
        or parts.password is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        return None
    scheme = parts.scheme.lower()
    if ":" in host:
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS.get(scheme):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def parse_origins(text: str) -> tuple[str, ...]:
    """A comma-separated allowlist → canonical origins; ``ValueError`` naming a bad entry."""
    origins: list[str] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        canonical = ANY if entry == ANY else normalize_origin(entry)
        if canonical is None:
            raise ValueError(f"not an origin (scheme://host[:port]): {entry!r}")
        origins.append(canonical)
    return tuple(origins)


def is_loopback_origin(origin: str) -> bool:
    """An ``http``/``https`` page served from this machine."""
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or parts.hostname is None:
        return False
    host = parts.hostname
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OriginPolicy:
    """Which browser origins may open a WebSocket (see the module docstring)."""

    __slots__ = ("allow_any", "allowed")

    def __init__(self, allowed: tuple[str, ...]) -> None:
        self.allow_any = ANY in allowed
        self.allowed = frozenset(o for o in allowed if o != ANY)

    @classmethod
    def from_text(cls, text: str) -> OriginPolicy:
        """The policy of an ``--allowed-origins`` value."""
        return cls(parse_origins(text))

    @property
    def loopback_only(self) -> bool:
        """The default: no list given."""
        return not self.allow_any and not self.allowed

    def allows(self, origins: list[str]) -> bool:
        """Whether a handshake whose ``Origin`` header values are ``origins`` may go on."""
        if not origins:
            return True
        if len(origins) > 1:
            # Browsers send exactly one; several are a forgery or a broken proxy.
            return False
        if self.allow_any:
            return True
        canonical = normalize_origin(origins[0])
        if canonical is None:
            return False
        if self.loopback_only:
            return is_loopback_origin(canonical)
        return canonical in self.allowed

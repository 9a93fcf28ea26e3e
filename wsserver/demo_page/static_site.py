"""Static files from the package, served by exact name only.

Every file under ``static/`` is read once, at startup, into a table keyed by its URL
path. A request is answered only when its raw path is a key: ``..``, percent-encoded
dots or slashes, backslashes, absolute paths and NUL bytes are simply names that are
not in the table, so nothing outside the folder can ever be reached, whatever the
decoding rules of a client, a proxy or this server.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from importlib import resources
from importlib.resources.abc import Traversable

from websockets.datastructures import Headers
from websockets.http11 import Response

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
"""The file types served; any other file in the folder is left out."""

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self' blob:; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; media-src 'self' blob:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""No inline script or style; ``blob:`` scripts are the SDK's AudioWorklet processors;
``connect-src 'self'`` covers the page's own ws:// and wss:// origin."""

SECURITY_HEADERS = (
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Permissions-Policy", "microphone=(self), camera=(), geolocation=()"),
)
"""Sent with every answer under the demo's prefix, errors included."""


@dataclass(frozen=True)
class StaticFile:
    """One file's bytes and type."""

    body: bytes
    content_type: str


class StaticSite:
    """The files of a package folder, answered by exact URL path under ``prefix``."""

    def __init__(self, folder: Traversable, prefix: str) -> None:
        self.prefix = prefix
        self.files: dict[str, StaticFile] = {}
        self._add(folder, prefix)
        index = self.files.get(prefix + "index.html")
        if index is not None:
            self.files[prefix] = index

    def _add(self, folder: Traversable, at: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                self._add(entry, f"{at}{entry.name}/")
                continue
            suffix = entry.name[entry.name.rfind(".") :] if "." in entry.name else ""
            if suffix in CONTENT_TYPES:
                self.files[at + entry.name] = StaticFile(entry.read_bytes(), CONTENT_TYPES[suffix])

    def answer(self, method: str, path: str) -> Response:
        """The file at ``path`` (GET or HEAD), or a 404/405 with the same headers."""
        if method not in ("GET", "HEAD"):
            return page_response(HTTPStatus.METHOD_NOT_ALLOWED, b"use GET\n", "text/plain")
        found = self.files.get(path)
        if found is None:
            return page_response(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
        body = b"" if method == "HEAD" else found.body
        return page_response(HTTPStatus.OK, body, found.content_type, length=len(found.body))


def page_response(
    status: HTTPStatus,
    body: bytes,
    content_type: str,
    *,
    length: int | None = None,
    cache: str = "no-cache",
    extra: tuple[tuple[str, str], ...] = (),
) -> Response:
    """An answer with the demo's security headers; by default revalidated before each
    use (a new worker version must not run an old page against it)."""
    headers = Headers(
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body) if length is None else length)),
            ("Cache-Control", cache),
            *SECURITY_HEADERS,
            *extra,
        ]
    )
    return Response(status.value, status.phrase, headers, body)


def package_site(prefix: str) -> StaticSite:
    """The demo page's files shipped in this package."""
    return StaticSite(resources.files("wsserver.demo_page") / "static", prefix)

"""``/demo/``: the demo page's files, and ``POST /demo/token``, which tells the page how
to authenticate.

The token endpoint never hands out an API key. With authentication off it answers
``{"token": null}`` (the page connects without a credential, as any client may). With
authentication on it mints a client token for ``--demo-principal`` that lives 60 s and
opens one session (the page asks again for every connection), and only when that
principal is configured: the operator decides that page visitors act as it. A request
must carry an ``Origin`` the Origin allowlist accepts, so another site's page cannot
use a visitor's browser to fetch tokens (and without CORS headers it could not read
them); a non-browser client can forge any Origin, so the principal's quotas, not the
Origin, are what bound it.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from websockets.http11 import Response

from wsserver.demo_page.config import DemoPageSettings
from wsserver.demo_page.errors import DemoPageConfigError
from wsserver.demo_page.static_site import StaticSite, package_site, page_response
from wsserver.frontdoor.api_keys import check_principal_name
from wsserver.frontdoor.authenticator import Authenticator

PREFIX = "/demo/"
TOKEN_PATH = "/demo/token"
TOKEN_TTL_S = 60.0


class DemoPage:
    """Answers every plain HTTP request for ``/``, ``/demo`` and under ``/demo/``."""

    def __init__(self, settings: DemoPageSettings, authenticator: Authenticator) -> None:
        check_settings(settings, authenticator)
        self.site: StaticSite = package_site(PREFIX)
        self._settings = settings
        self._authenticator = authenticator

    @staticmethod
    def enabled(settings: DemoPageSettings, authenticator: Authenticator) -> bool:
        """Whether the settings serve the page."""
        if settings.demo_page == "auto":
            return not authenticator.required
        return settings.demo_page == "on"

    @staticmethod
    def handles(path: str) -> bool:
        """Whether a request path is the demo's."""
        return path in ("/", "/demo") or path.startswith(PREFIX)

    def answer(self, method: str, path: str, origins: list[str]) -> Response:
        """The answer to a request for one of :meth:`handles`' paths."""
        if path in ("/", "/demo"):
            return page_response(HTTPStatus.FOUND, b"", "text/plain", extra=(("Location", PREFIX),))
        if path == TOKEN_PATH:
            status, body = self._token(method, origins)
            payload = json.dumps(body).encode()
            return page_response(status, payload, "application/json", cache="no-store")
        return self.site.answer(method, path)

    def _token(self, method: str, origins: list[str]) -> tuple[HTTPStatus, dict[str, Any]]:
        if method != "POST":
            return HTTPStatus.METHOD_NOT_ALLOWED, {"error": "use POST"}
        # The front door already refused an Origin outside the allowlist.
        if len(origins) != 1:
            return HTTPStatus.FORBIDDEN, {"error": "a demo token is for a page: send one Origin"}
        if not self._authenticator.required:
            return HTTPStatus.OK, {"token": None, "auth": "none"}
        principal = self._settings.demo_principal
        tokens = self._authenticator.tokens
        if not principal or tokens is None:
            return HTTPStatus.NOT_FOUND, {
                "error": "this server gives the demo page no token (--demo-principal and "
                "--client-token-secret-file)"
            }
        token, claims = tokens.mint(principal, ttl_s=TOKEN_TTL_S, max_sessions=1, can_start=True)
        return HTTPStatus.CREATED, {"token": token, "expires_at": claims.expires_at}


def check_settings(settings: DemoPageSettings, authenticator: Authenticator) -> None:
    """Refuse at startup a principal the endpoint could never mint for, rather than a
    page that loads and then fails every visitor's token request (or no page at all)."""
    principal = settings.demo_principal
    if not principal or not authenticator.required:
        return
    if settings.demo_page != "on":
        raise DemoPageConfigError(
            f"--demo-principal needs --demo-page on (with authentication on, "
            f"--demo-page {settings.demo_page} serves no page)"
        )
    if authenticator.tokens is None:
        raise DemoPageConfigError(
            "--demo-principal needs --client-token-secret-file: the page's visitors "
            "connect with client tokens"
        )
    try:
        check_principal_name(principal)
    except ValueError as exc:
        raise DemoPageConfigError(f"--demo-principal: {exc}") from exc


def page_url(host: str, port: int, *, tls: bool) -> str:
    """The page's address to print for a worker bound to ``host``: a wildcard bind is
    opened on loopback (a page at ``0.0.0.0`` sends an Origin no allowlist entry or
    loopback rule accepts), an IPv6 address in brackets."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"{'https' if tls else 'http'}://{host}:{port}{PREFIX}"

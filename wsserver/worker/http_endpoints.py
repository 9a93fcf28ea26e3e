"""The worker's HTTP side: the checks before a WebSocket upgrade, and its endpoints.

On the main port every request is authenticated and counted by the front door
(Origin, handshake rate) before anything else, except the probes ``/healthz`` and
``/readyz``, which say nothing about sessions. An upgrade that passes is admitted
(or refused before the upgrade while draining or full, so a router can place it
elsewhere); ``/v1/client_tokens`` mints client tokens; ``/stats`` and ``/usage/ID``
and ``/metrics`` need an admin credential. The admin listener (``--admin-port``) serves
the probes, ``/stats``, ``/metrics`` and ``/usage/ID`` without credentials and no
WebSockets.
"""

from __future__ import annotations

import json
import logging
import weakref
from http import HTTPStatus
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from wsserver.demo_page.endpoint import DemoPage, check_settings
from wsserver.frontdoor.authenticator import Authenticator, AuthRefusal, forbidden
from wsserver.frontdoor.gate import FrontDoor
from wsserver.frontdoor.principal import Admission, Principal
from wsserver.frontdoor.quotas import Client
from wsserver.frontdoor.token_endpoint import PATH as CLIENT_TOKENS_PATH
from wsserver.frontdoor.token_endpoint import mint_client_token
from wsserver.metrics import CONTENT_TYPE, WorkerMetrics, render
from wsserver.metrics.labels import auth_reason
from wsserver.store.base import SessionStore, SessionStoreUnavailable, StoredDataUnreadable
from wsserver.worker.handshake import RETRY_AFTER_MS
from wsserver.worker.settings import Settings
from wsserver.worker.usage_report import usage_report

log = logging.getLogger(__name__)

ADMIN_PATHS = ("/stats", "/metrics")
"""Endpoints for operators: an admin credential on the main port, none on the admin one."""


class EndpointHost(Protocol):
    """What the endpoints need of the worker."""

    settings: Settings
    authenticator: Authenticator
    front_door: FrontDoor
    store: SessionStore
    draining: bool
    metrics: WorkerMetrics

    @property
    def full(self) -> bool:
        """Whether the worker is at its session limit."""
        ...

    def front_door_client(
        self, ws: ServerConnection, request: Request, principal: Principal | None
    ) -> Client:
        """Who a connection is, for quotas."""
        ...

    async def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Whether the worker takes sessions, and the checks that say so."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counters for monitoring."""
        ...


class HttpEndpoints:
    """Answers HTTP requests on the worker's ports; remembers whom each upgrade let in."""

    def __init__(self, host: EndpointHost) -> None:
        self._host = host
        self.admitted: weakref.WeakKeyDictionary[ServerConnection, Admission] = (
            weakref.WeakKeyDictionary()
        )
        """Who each handshake let in is, until its connection goes."""
        check_settings(host.settings, host.authenticator)
        self._demo = (
            DemoPage(host.settings, host.authenticator)
            if DemoPage.enabled(host.settings, host.authenticator)
            else None
        )
        """The browser demo page (``/demo/``), when the settings serve it."""

    @property
    def serves_demo_page(self) -> bool:
        """Whether ``/demo/`` is served (the settings and the authentication decide)."""
        return self._demo is not None

    async def process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """The main port: ``None`` lets a WebSocket upgrade go on; else the answer."""
        host = self._host
        path, _, query = request.path.partition("?")
        headers = request.headers
        # get_all: a request may repeat a header (get() would raise on two Upgrade lines).
        upgrade = [value.lower() for value in headers.get_all("Upgrade")] == ["websocket"]
        if not upgrade and path in ("/healthz", "/readyz"):
            # Open to probes: they say nothing about sessions.
            return await self._probe(path)
        found = host.authenticator.authenticate(
            authorization=", ".join(headers.get_all("Authorization")) or None,
            subprotocols=", ".join(headers.get_all("Sec-WebSocket-Protocol")) or None,
            query=query,
        )
        # Counted before the credential is judged, so guessing keys is rate limited too.
        principal = found if isinstance(found, Principal) else None
        client = host.front_door_client(connection, request, principal)
        # Only a plain request: a botched upgrade to "/" gets its HTTP error, not the page.
        plain = not headers.get_all("Upgrade")
        demo = self._demo is not None and plain and DemoPage.handles(path)
        # The demo's token endpoint is for pages: the Origin allowlist applies to it too.
        origins = headers.get_all("Origin") if upgrade or demo else []
        refusal = host.front_door.handshake(client, origins)
        if refusal is not None:
            host.metrics.auth_refused("origin" if refusal.status == 403 else "rate_limited")
            retry = refusal.retry_after_header if refusal.retry_after else None
            return json_response(refusal.status, refusal.body(), retry_after=retry)
        if demo and self._demo is not None:
            # Public files and a token endpoint that decides for itself: no credential.
            return self._demo.answer(request.method, path, origins)
        if isinstance(found, AuthRefusal):
            host.metrics.auth_refused(auth_reason(found.status, found.message))
            return refusal_response(found)
        if upgrade:
            return self._admit(connection, request, found, client.address)
        if path == CLIENT_TOKENS_PATH:
            status, body = mint_client_token(
                host.authenticator, host.settings, found, request.method, query
            )
            return json_response(status, body)
        if path in ADMIN_PATHS or path.startswith("/usage/"):
            if not found.admin:
                host.metrics.auth_refused("forbidden")
                return refusal_response(forbidden(f"{path.split('/')[1]} needs an admin key"))
            return await self._admin_endpoint(path)
        return None

    def _admit(
        self, connection: ServerConnection, request: Request, principal: Principal, client_ip: str
    ) -> Response | None:
        """Let an authenticated WebSocket handshake that passed the quota gate in, or
        refuse it before the upgrade (draining, full); remember who and from where."""
        host = self._host
        query = request.path.partition("?")[2]
        # Refuse before the upgrade, so a router can place the connection elsewhere.
        resuming = "session_id=" in query or "X-Wsserver-Session" in request.headers
        if host.draining or (host.full and not resuming):
            return json_response(
                HTTPStatus.SERVICE_UNAVAILABLE,
                {"error": "draining" if host.draining else "at capacity"},
                retry_after=RETRY_AFTER_MS // 1000 or 1,
            )
        self.admitted[connection] = Admission(principal, client_ip)
        return None

    async def admin_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """The admin listener: every read-only endpoint, no credentials, no WebSockets."""
        path = request.path.partition("?")[0]
        if path in ("/healthz", "/readyz"):
            return await self._probe(path)
        if path in ADMIN_PATHS or path.startswith("/usage/"):
            return await self._admin_endpoint(path)
        return json_response(HTTPStatus.NOT_FOUND, {"error": "no such endpoint"})

    async def _probe(self, path: str) -> Response:
        if path == "/healthz":
            return json_response(HTTPStatus.OK, {"status": "ok"})
        ready, checks = await self._host.readiness()
        status = HTTPStatus.OK if ready else HTTPStatus.SERVICE_UNAVAILABLE
        return json_response(status, {"ready": ready, **checks})

    async def _admin_endpoint(self, path: str) -> Response:
        if path == "/stats":
            return json_response(HTTPStatus.OK, self._host.stats())
        if path == "/metrics":
            return metrics_response(self._host.metrics.registry)
        return await self._usage_response(path.removeprefix("/usage/"))

    async def _usage_response(self, session_id: str) -> Response:
        try:
            entries = await self._host.store.usage(session_id)
        except StoredDataUnreadable as exc:
            # Damaged, not down: asking again gives the same answer.
            log.error("usage ledger of %s is unreadable: %s", session_id, exc)
            return json_response(
                HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "the stored usage ledger is unreadable"}
            )
        except SessionStoreUnavailable:
            return json_response(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "store unavailable"})
        if not entries:
            return json_response(HTTPStatus.NOT_FOUND, {"error": "no usage for this session"})
        return json_response(HTTPStatus.OK, usage_report(session_id, entries))


async def no_websocket(ws: ServerConnection) -> None:
    """The admin listener's handler: never reached, every request is answered before."""
    await ws.close()


def metrics_response(registry: CollectorRegistry | None) -> Response:
    """The Prometheus text format; 404 with ``--metrics off`` (no registry)."""
    if registry is None:
        return json_response(HTTPStatus.NOT_FOUND, {"error": "metrics are off (--metrics off)"})
    payload = render(registry)
    headers = Headers([("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(payload)))])
    return Response(HTTPStatus.OK.value, HTTPStatus.OK.phrase, headers, payload)


def refusal_response(refusal: AuthRefusal) -> Response:
    """HTTP 401/403 with a JSON body and ``WWW-Authenticate``, sent instead of the upgrade."""
    response = json_response(refusal.status, refusal.body())
    response.headers["WWW-Authenticate"] = refusal.www_authenticate
    return response


def json_response(
    status: HTTPStatus, body: dict[str, Any], *, retry_after: int | None = None
) -> Response:
    """A small JSON answer, with ``Retry-After`` when given."""
    payload = json.dumps(body).encode()
    headers = Headers([("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return Response(status.value, status.phrase, headers, payload)

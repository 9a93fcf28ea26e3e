"""The router: puts each WebSocket connection on a worker, then relays its bytes.

Per connection, in order:

1. read the HTTP request head, bounded in size (``max_head_bytes``) and time
   (``handshake_timeout``). No WebSocket library: frames are never parsed, so close
   codes, pings and every message pass through untouched;
2. answer ``/healthz`` and ``/readyz`` (open to probes); authenticate everything else
   (:mod:`wsserver.frontdoor`: 401/403 before any worker is contacted); answer ``/stats``
   and ``/metrics`` (admin credential) and ``POST /v1/client_tokens``; any other
   non-upgrade request gets 400;
3. order the candidate workers (:func:`placement_order`): the session's owner if it is
   live, then rendezvous hashing over the live workers the background refresh last read;
4. for each candidate: connect, forward the head, and read the worker's response head
   before committing to it. ``101`` → splice; ``503`` (draining, full) or no answer →
   next candidate; any other status is the worker's verdict on the request itself and
   goes to the client as is;
5. no candidate took it → ``503`` with ``Retry-After: 1``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from wsserver.frontdoor.addresses import parse_networks
from wsserver.frontdoor.authenticator import Authenticator, AuthRefusal, forbidden
from wsserver.frontdoor.gate import FrontDoor, peer_host
from wsserver.frontdoor.origin import OriginPolicy
from wsserver.frontdoor.principal import Principal
from wsserver.frontdoor.quotas import QuotaLimits, Quotas
from wsserver.frontdoor.tls import server_context
from wsserver.frontdoor.token_endpoint import PATH as CLIENT_TOKENS_PATH
from wsserver.frontdoor.token_endpoint import mint_client_token
from wsserver.metrics import router_metrics
from wsserver.metrics.labels import auth_reason
from wsserver.registry.base import RegistryUnavailable, WorkerInfo, WorkerRegistry
from wsserver.registry.selector import open_registry
from wsserver.router.errors import MalformedHead
from wsserver.router.http import (
    END_OF_HEAD,
    RequestHead,
    parse_request_head,
    refuse,
    respond,
    respond_metrics,
    with_forwarded_for,
)
from wsserver.router.placement import placement_order
from wsserver.router.relay import CHUNK, Relay, tune
from wsserver.router.settings import ROUTER_ENV_PREFIX, RouterSettings

__all__ = ["COUNTERS", "ROUTER_ENV_PREFIX", "Router", "RouterSettings", "router_front_door"]

log = logging.getLogger("wsserver.router.server")

COUNTERS = (
    "connections_relayed",
    "active",
    "refused",
    "retries",
    "worker_refusals",
    "worker_failures",
    "bad_requests",
    "unauthorized",
)


def router_front_door(settings: RouterSettings) -> FrontDoor:
    """The Origin allowlist and the handshake rate per address: the router's first checks."""
    limits = QuotaLimits(
        handshakes_per_second_per_ip=settings.handshakes_per_second_per_ip,
        handshake_burst_per_ip=settings.handshake_burst_per_ip,
        exempt=parse_networks(settings.quota_exempt),
    )
    return FrontDoor(
        OriginPolicy.from_text(settings.allowed_origins),
        Quotas(limits),
        parse_networks(settings.trusted_proxies),
    )


class Router:
    """Listens for clients and relays each one to a worker. ``start()``, then ``stop()``."""

    def __init__(self, settings: RouterSettings, registry: WorkerRegistry | None = None) -> None:
        self.settings = settings
        self.registry = registry or open_registry(
            settings.store,
            timeout=settings.store_timeout,
            max_connections=settings.store_max_connections or None,
        )
        self.workers: list[WorkerInfo] = []
        """Live workers as of the last successful refresh (kept while Redis is down)."""
        self.registry_up = False
        self.front_door = router_front_door(settings)
        self.counters = dict.fromkeys(COUNTERS, 0)
        """Totals since start (``active``: relayed now), for ``/stats``."""
        self._server: asyncio.Server | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._refreshed = False
        self.authenticator = Authenticator.from_settings(settings, settings.host)
        self.tls = (
            server_context(settings.tls_cert, settings.tls_key) if settings.tls_enabled() else None
        )
        self.metrics = router_metrics(settings.metrics == "on")
        self.relay = Relay(settings, self.counters, self.metrics)
        self._admin_server: asyncio.Server | None = None

    async def start(self) -> None:
        """Read the workers once, listen, and keep the worker list fresh."""
        await self.refresh()
        self._server = await asyncio.start_server(
            self._accept,
            self.settings.host,
            self.settings.port,
            limit=max(self.settings.max_head_bytes, CHUNK),
            backlog=2048,  # a dead worker's clients all come back at once
            ssl=self.tls,
            ssl_handshake_timeout=self.settings.handshake_timeout if self.tls else None,
        )
        if self.settings.admin_port:
            self._admin_server = await asyncio.start_server(
                self._accept_admin, self.settings.admin_host, self.settings.admin_port
            )
        self._refresher = asyncio.create_task(self._refresh_loop(), name="router refresh")

    @property
    def port(self) -> int:
        """The bound port (useful with ``port=0``)."""
        assert self._server is not None, "router not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening and cut every relayed connection (clients resume elsewhere)."""
        self._closing = True
        if self._admin_server is not None:
            self._admin_server.close()
            await self._admin_server.wait_closed()
        if self._server is not None:
            self._server.close()
        tasks = [*self._connections, *([self._refresher] if self._refresher else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        await self.registry.close()

    async def refresh(self) -> None:
        """Re-read the live workers; on failure keep routing with the last list."""
        first, self._refreshed = not self._refreshed, True
        try:
            workers = await self.registry.live()
        except RegistryUnavailable as exc:
            if self.registry_up or first:  # log the transitions, not every failed refresh
                log.warning("registry unavailable, keeping %d workers: %s", len(self.workers), exc)
            self.registry_up = False
            return
        if not self.registry_up:
            log.info("registry up: %d live workers", len(workers))
        self.registry_up = True
        self.workers = workers

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.refresh_interval)
            await self.refresh()

    def stats(self) -> dict[str, Any]:
        """Counters for monitoring and tests."""
        live = {
            "live_workers": len(self.workers),
            "registry_up": self.registry_up,
            "relay_buffered_bytes": self.relay.buffered_bytes(),
        }
        return {**self.counters, **live, "front_door": self.front_door.quotas.stats()}

    # -- one connection ----------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if self._closing or task is None:
            writer.transport.abort()
            return
        self._connections.add(task)
        try:
            tune(writer, self.settings.tcp_user_timeout, send_buffer=self.settings.socket_buffer)
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            # Only stop() cancels a connection task, and this is the task's outermost
            # frame: end it quietly. Re-raised, Python 3.11's stream server logs a
            # traceback for every connection cut at shutdown (its done-callback asks a
            # cancelled task for its exception).
            writer.transport.abort()
        except Exception:
            log.exception("router connection failed")
        finally:
            self._connections.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(self.settings.handshake_timeout):
                raw = await reader.readuntil(END_OF_HEAD)
            if len(raw) > self.settings.max_head_bytes:
                raise asyncio.LimitOverrunError("head too large", len(raw))
            head = parse_request_head(raw)
        except asyncio.LimitOverrunError:
            return await self._reject(writer, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "head")
        except MalformedHead as exc:
            return await self._reject(writer, HTTPStatus.BAD_REQUEST, str(exc))
        except (asyncio.IncompleteReadError, TimeoutError, OSError):
            self.counters["bad_requests"] += 1  # gone or silent before a whole head: just close
            return None
        if not head.upgrade and head.method == "GET" and head.path in ("/healthz", "/readyz"):
            return await self._probe(head.path, writer)
        if not await self._front_door_admits(head, writer):
            return None  # too fast, or a page of a foreign origin: before any credential check
        found = self.authenticator.authenticate(
            authorization=head.headers.get("authorization"),
            subprotocols=head.headers.get("sec-websocket-protocol"),
            query=urlsplit(head.target).query,
        )
        if isinstance(found, AuthRefusal):
            self.counters["unauthorized"] += 1
            self.metrics.auth_refused(auth_reason(found.status, found.message))
            return await refuse(writer, found)
        if head.upgrade:
            await self._relay(head, reader, writer)
        elif head.path == CLIENT_TOKENS_PATH:
            status, body = mint_client_token(
                self.authenticator, self.settings, found, head.method, urlsplit(head.target).query
            )
            await respond(writer, status, body)
        elif head.method == "GET" and head.path in ("/stats", "/metrics"):
            await self._stats(head.path, found, writer)
        else:
            await self._reject(writer, HTTPStatus.BAD_REQUEST, "expected a websocket upgrade")
        return None

    async def _front_door_admits(self, head: RequestHead, writer: asyncio.StreamWriter) -> bool:
        """Origin and handshake rate, before any worker is tried; answers a refusal."""
        peer = peer_host(writer.get_extra_info("peername"))
        forwarded = [head.headers["x-forwarded-for"]] if "x-forwarded-for" in head.headers else []
        client = self.front_door.client(peer, forwarded, None)
        origins = [head.headers["origin"]] if "origin" in head.headers else []
        refusal = self.front_door.handshake(client, origins)
        if refusal is None:
            return True
        self.metrics.auth_refused("origin" if refusal.status == 403 else "rate_limited")
        retry = refusal.retry_after_header if refusal.retry_after else 0
        await respond(writer, refusal.status, refusal.body(), retry=retry)
        return False

    async def _probe(self, path: str, writer: asyncio.StreamWriter) -> None:
        if path == "/healthz":
            return await respond(writer, HTTPStatus.OK, {"status": "ok"})
        routable = sum(not w.draining for w in self.workers)
        ready = self.registry_up and routable > 0
        body = {"ready": ready, "registry": self.registry_up, "routable_workers": routable}
        await respond(writer, HTTPStatus.OK if ready else HTTPStatus.SERVICE_UNAVAILABLE, body)
        return None

    async def _stats(self, path: str, principal: Principal, writer: asyncio.StreamWriter) -> None:
        if not principal.admin:
            self.metrics.auth_refused("forbidden")
            return await refuse(writer, forbidden(f"{path[1:]} needs an admin key"))
        if path == "/metrics":
            return await respond_metrics(writer, self.metrics.registry)
        await respond(writer, HTTPStatus.OK, self.stats())
        return None

    async def _accept_admin(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """The admin listener: probes and ``/stats`` without credentials, nothing else."""
        try:
            async with asyncio.timeout(self.settings.handshake_timeout):
                raw = await reader.readuntil(END_OF_HEAD)
            try:
                head = parse_request_head(raw)
            except MalformedHead as exc:
                return await respond(writer, HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            if head.path in ("/healthz", "/readyz"):
                await self._probe(head.path, writer)
            elif head.path == "/stats":
                await respond(writer, HTTPStatus.OK, self.stats())
            elif head.path == "/metrics":
                await respond_metrics(writer, self.metrics.registry)
            else:
                await respond(writer, HTTPStatus.NOT_FOUND, {"error": "no such endpoint"})
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass
        except TimeoutError:
            pass
        finally:
            writer.close()

    async def _reject(self, writer: asyncio.StreamWriter, status: HTTPStatus, error: str) -> None:
        self.counters["bad_requests"] += 1
        await respond(writer, status, {"error": error})

    async def _relay(
        self, head: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        owner, session_id = None, head.session_id
        if session_id is not None and self.registry_up:
            with contextlib.suppress(RegistryUnavailable):
                owner = await self.registry.owner_of(session_id)
        # A new session has no key yet: a random one spreads new sessions evenly.
        key = session_id or secrets.token_hex(8)
        candidates = placement_order(key, self.workers, owner)[: self.settings.max_attempts]
        peer = writer.get_extra_info("peername")
        forwarded = with_forwarded_for(head.raw, str(peer[0]) if peer else "unknown")
        for attempt, worker in enumerate(candidates):
            if attempt:
                self.counters["retries"] += 1
            upstream = await self.relay.open(worker, forwarded)
            if upstream is None:
                continue
            if upstream.status == 503:
                self.counters["worker_refusals"] += 1
                self.metrics.placement_failed("refused")
                upstream.writer.transport.abort()
                continue
            writer.write(upstream.response)
            if upstream.status == 101:
                self.counters["connections_relayed"] += 1
            self.metrics.placed("relayed" if upstream.status == 101 else "worker_answer")
            await self.relay.splice(reader, writer, upstream)
            return
        self.counters["refused"] += 1
        self.metrics.placed("no_worker")
        # Every worker is full, draining or gone: the client backs off and retries.
        await respond(writer, HTTPStatus.SERVICE_UNAVAILABLE, {"error": "no worker"}, retry=1)

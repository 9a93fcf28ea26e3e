"""The worker: a websockets server that hosts session runtimes.

This module accepts connections and runs the worker's periodic work (heartbeats,
lease renewal, the registry entry). The HTTP side is :mod:`.http_endpoints`, the
answers to ``session.start``/``session.resume`` are :mod:`.handshake`, the
shutdown sequence of a deploy is :mod:`.drain`, and what the settings name is built
by :mod:`.components`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import time
from collections.abc import Coroutine
from typing import Any
from urllib.parse import parse_qs

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request

from protocol.codes import CloseCode
from protocol.encoding import SUBPROTOCOLS
from protocol.events import HEARTBEAT, connection_message
from protocol.messages import SessionResume, SessionStart
from wsserver.engine.base import Engine
from wsserver.frontdoor.authenticator import Authenticator
from wsserver.frontdoor.gate import FrontDoor, peer_host
from wsserver.frontdoor.principal import Admission, AuthMethod, Principal
from wsserver.frontdoor.quotas import Client, Refusal
from wsserver.frontdoor.tls import server_context
from wsserver.registry.base import RegistryUnavailable, WorkerInfo, WorkerRegistry
from wsserver.session.persistence import Persister
from wsserver.session.runtime import RuntimeContext, SessionRuntime
from wsserver.store.base import SessionStore
from wsserver.transport.control_frames import control_frame_limited
from wsserver.transport.fast_websocket import FastConnection
from wsserver.transport.realtime import DEFAULT_MODEL, REALTIME_PATH, RealtimeConnection
from wsserver.transport.websocket import Connection
from wsserver.worker import components, drain, handshake
from wsserver.worker.http_endpoints import HttpEndpoints, no_websocket
from wsserver.worker.metrics_wiring import metrics_of
from wsserver.worker.session_manager import SessionManager
from wsserver.worker.settings import Settings


class WorkerServer:
    """Accepts connections, binds them to sessions, sends heartbeats, serves health."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        engine: Engine | None = None,
        store: SessionStore | None = None,
    ) -> None:
        self.settings = settings or Settings()
        settings = self.settings
        components.check_detector(settings)
        self.worker_id = settings.worker_id or default_worker_id()
        # Fail at startup (FrontDoorConfigError), not at the first request.
        self.authenticator = Authenticator.from_settings(settings, settings.host)
        self.tls = (
            server_context(settings.tls_cert, settings.tls_key) if settings.tls_enabled() else None
        )
        self.http = HttpEndpoints(self)
        self._admin_server: Server | None = None
        self.engine: Engine = engine or components.engine_of(settings)
        self.store: SessionStore = store or components.store_of(settings)
        self.metrics = metrics_of(self)
        self.persister = Persister(self.store, interval=settings.store_flush_ms / 1000)
        self.manager = SessionManager(self.store, self._runtime_context, settings.limits())
        self.front_door: FrontDoor = components.front_door(
            settings, lambda session_id: session_id in self.sessions
        )
        self.connections: set[Connection] = set()
        self.draining = False
        self.registry: WorkerRegistry | None = None
        self._server: Server | None = None
        self._loops: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self.started_at = time.time()

    def _runtime_context(self, manager: SessionManager) -> RuntimeContext:
        return RuntimeContext(
            engine=self.engine,
            store=self.store,
            persister=self.persister,
            host=manager,
            worker_id=self.worker_id,
            grace_period=self.settings.grace_period,
            resume_window=self.settings.resume_window,
            vad=self.settings.vad,
            audio_limits=components.audio_limits(self.settings),
            tool_timeout=self.settings.tool_timeout,
            tool_retries=self.settings.tool_retries,
            metrics=self.metrics,
        )

    @property
    def sessions(self) -> dict[str, SessionRuntime]:
        """Live sessions on this worker, by id."""
        return self.manager.sessions

    # -- lifecycle -------------------------------------------------------

    async def start(self) -> None:
        """Start the engine, the listener, the store writer and the heartbeat ticker."""
        settings = self.settings
        await self.engine.start()
        self._server = await serve(
            self._handle,
            settings.host,
            settings.port,
            subprotocols=[*SUBPROTOCOLS],  # type: ignore[list-item]
            select_subprotocol=_select_subprotocol,
            process_request=self.http.process_request,
            compression="deflate" if settings.compression else None,
            max_size=settings.max_frame_bytes,
            ping_interval=settings.ping_interval,
            ping_timeout=settings.ping_timeout,
            close_timeout=settings.close_timeout,
            write_limit=settings.write_limit,
            # A worker's clients reconnect all at once when another worker dies.
            backlog=settings.listen_backlog,
            # --workers: the kernel spreads connections over the group's listeners.
            reuse_port=settings.reuse_port or None,
            ssl=self.tls,
            create_connection=control_frame_limited(
                settings.max_pings_per_second, settings.max_ping_burst
            ),
        )
        if settings.admin_port:
            self._admin_server = await serve(
                no_websocket,
                settings.admin_host,
                settings.admin_port,
                process_request=self.http.admin_request,
                # A group's replacement worker binds it before the old one lets go.
                reuse_port=settings.reuse_port or None,
            )
        self._loops = [
            asyncio.create_task(self.persister.run(), name="store writer"),
            asyncio.create_task(self._heartbeat_loop(), name="heartbeat"),
            asyncio.create_task(self._lease_loop(), name="leases"),
        ]
        if self.store.shared:
            # Routers find workers in the same Redis as the sessions.
            self.registry = components.registry_of(settings, self.store)
            self._loops.append(asyncio.create_task(self._registry_loop(), name="registry"))

    @property
    def port(self) -> int:
        """The bound port (useful with ``--port 0``)."""
        assert self._server is not None, "server not started"
        sockname: tuple[str, int] = next(iter(self._server.sockets)).getsockname()
        return sockname[1]

    async def drain(self, timeout: float, force: asyncio.Event | None = None) -> None:
        """The shutdown sequence of a deploy (SIGTERM): see :mod:`wsserver.worker.drain`."""
        await drain.drain(self, timeout, force)

    def stop_listening(self) -> None:
        """Close the listener and keep the connections (a draining member of a group:
        the kernel then gives new connections to the other processes on the port)."""
        if self._server is not None:
            self._server.close(close_connections=False)

    async def stop(self) -> None:
        """Shutdown: stop accepting, close clients with 1001, persist, stop the engine."""
        if self._server is None:
            return
        if self._admin_server is not None:
            self._admin_server.close()
            await self._admin_server.wait_closed()
            self._admin_server = None
        self._server.close(close_connections=False)
        for connection in list(self.connections):
            connection.close(CloseCode.GOING_AWAY, "server shutting down: resume elsewhere")
        await self._server.wait_closed()
        for runtime in list(self.sessions.values()):
            runtime.expire()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.persister.flush()
        for loop_task in self._loops:
            loop_task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        if self.registry is not None:
            with contextlib.suppress(RegistryUnavailable):
                await self.registry.withdraw(self.worker_id)
            await self.registry.close()
            self.registry = None
        await self.engine.close()
        await self.store.close()
        self._server = None

    async def serve_forever(self) -> None:
        """Run until cancelled."""
        assert self._server is not None, "server not started"
        await self._server.serve_forever()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run a background task and keep a reference until it ends."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- connections -----------------------------------------------------

    async def _handle(self, ws: ServerConnection) -> None:
        assert ws.request is not None, "handler called before the handshake"
        admission = self.http.admitted.get(ws)
        principal = admission.principal if admission is not None else None
        quota = self.front_door.connect(self.front_door_client(ws, ws.request, principal))
        if isinstance(quota, Refusal):  # concurrent handshakes raced past the check
            self.metrics.closed(CloseCode.CONNECTION_LIMIT_REACHED)
            await ws.close(CloseCode.CONNECTION_LIMIT_REACHED, quota.message)
            return
        connection = _connection_for(ws, self)
        connection.quota = quota
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)
            quota.release()

    def front_door_client(
        self, ws: ServerConnection, request: Request, principal: Principal | None
    ) -> Client:
        """Who a connection is, for quotas: its address (through trusted proxies) and its
        principal — anonymous (``None``) while unauthenticated or with ``--auth none``."""
        forwarded = request.headers.get_all("X-Forwarded-For")
        return self.front_door.client(
            peer_host(ws.remote_address), forwarded, quota_principal(principal)
        )

    @property
    def full(self) -> bool:
        """Whether this worker is at its session limit."""
        limit = self.settings.max_sessions
        return limit > 0 and len(self.sessions) >= limit

    def admission(self, connection: Connection) -> Admission | None:
        """Who the connection's handshake was let in as, and from where (None: never)."""
        return self.http.admitted.get(connection.ws)

    def principal_of(self, connection: Connection) -> Principal | None:
        """Who the connection's handshake was let in as (None: never admitted)."""
        admission = self.admission(connection)
        return admission.principal if admission is not None else None

    async def open_session(self, connection: Connection, message: SessionStart) -> None:
        """Create a session and bind it to the connection (or refuse: draining, full)."""
        await handshake.open_session(self, connection, message)

    async def resume_session(self, connection: Connection, message: SessionResume) -> None:
        """Re-attach a session and replay what the client missed, or refuse explicitly."""
        await handshake.resume_session(self, connection, message)

    # -- periodic work -----------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        # One ticker for all connections instead of a timer task per connection.
        interval = self.settings.heartbeat_interval
        while True:
            await asyncio.sleep(interval)
            now_ms = int(time.time() * 1000)
            for connection in list(self.connections):
                runtime = connection.runtime
                if runtime is not None:
                    connection.send_control(
                        connection_message(
                            HEARTBEAT, server_time_ms=now_ms, last_seq=runtime.last_seq
                        )
                    )

    @property
    def advertise_url(self) -> str:
        """How routers reach this worker."""
        scheme = "wss" if self.tls is not None else "ws"
        return self.settings.advertise_url or f"{scheme}://{self.settings.host}:{self.port}"

    def worker_info(self) -> WorkerInfo:
        """This worker's entry in the registry."""
        return WorkerInfo(
            worker_id=self.worker_id,
            url=self.advertise_url,
            capacity=self.settings.max_sessions,
            sessions=len(self.sessions),
            draining=self.draining,
            updated_at=time.time(),
        )

    async def _registry_loop(self) -> None:
        # The entry lapses by itself three intervals after the last one: a killed
        # worker disappears from routers' lists without anyone cleaning up.
        assert self.registry is not None
        while True:
            with contextlib.suppress(RegistryUnavailable):
                await self.registry.publish(self.worker_info())
            await asyncio.sleep(self.settings.registry_interval)

    async def _lease_loop(self) -> None:
        # Renew well before the lease runs out, so a live owner never looks dead.
        while True:
            await asyncio.sleep(self.settings.lease_ttl / 3)
            await self.manager.renew_leases()

    # -- health and counters -----------------------------------------------

    async def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready when the store answers and the worker is not draining."""
        store_ok = await self.store.ready()
        checks = {"store": store_ok, "draining": self.draining}
        return store_ok and not self.draining, checks

    def stats(self) -> dict[str, Any]:
        """Counters for monitoring and tests."""
        runtimes = list(self.sessions.values())
        return {
            "worker_id": self.worker_id,
            "sessions": len(runtimes),
            "attached": sum(1 for r in runtimes if r.transport is not None),
            "connections": len(self.connections),
            "ws_engine": self.settings.ws_engine,
            "outbox_bytes_max": max((r.session.outbox.nbytes for r in runtimes), default=0),
            "outbox_peak_bytes_max": max(
                (r.session.outbox.peak_bytes for r in runtimes), default=0
            ),
            "engine": self.engine.stats(),
            "store": {
                "kind": self.settings.store.split(":", 1)[0],
                "up": self.persister.store_up,
                "flushes": self.persister.flushes,
                "events_written": self.persister.events_written,
                "round_trips": getattr(self.store, "round_trips", 0),
                "takeovers": self.manager.takeovers,
            },
            "quotas": self.front_door.quotas.stats(),
            "uptime_s": round(time.time() - self.started_at, 3),
        }


def _connection_for(ws: ServerConnection, server: WorkerServer) -> Connection:
    """The native connection, or the Realtime dialect's on its path."""
    assert ws.request is not None
    path, _, query = ws.request.path.partition("?")
    if path == REALTIME_PATH:
        model = parse_qs(query).get("model", [DEFAULT_MODEL])[0][:128]
        return RealtimeConnection(ws, server, model)
    if server.settings.ws_engine == "fast":
        return FastConnection(ws, server)
    return Connection(ws, server)


def default_worker_id() -> str:
    """host-pid-random: unique across restarts on one host."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"


def _select_subprotocol(connection: ServerConnection, offered: Any) -> Any:
    # Credential entries (wsserver.token.…) are never in SUBPROTOCOLS: never selected.
    for subprotocol in offered:
        if subprotocol in SUBPROTOCOLS:
            return subprotocol
    # No (known) subprotocol offered: JSON, so plain WebSocket tools work.
    return None


def quota_principal(principal: Principal | None) -> str | None:
    """Whom the per-principal quotas count: the principal, or for a client token the token
    itself (one app user's token must not use up its account's connections, messages or
    failed resumes); ``None`` while anonymous."""
    if principal is None or principal.method is AuthMethod.NONE:
        return None
    if principal.method is AuthMethod.CLIENT_TOKEN and principal.token_id is not None:
        return f"{principal.id}#{principal.token_id}"
    return principal.id

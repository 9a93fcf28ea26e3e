"""The worker: a websockets server that hosts session runtimes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time
import weakref
from collections.abc import Coroutine
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from protocol.codes import CloseCode, ErrorCode
from protocol.encoding import SUBPROTOCOLS
from protocol.errors import ProtocolViolation
from protocol.events import HEARTBEAT, SESSION_READY, connection_message
from protocol.messages import SessionResume, SessionStart
from wsserver.engine.base import Engine
from wsserver.engine.simulated import SimulatedEngine
from wsserver.frontdoor.authenticator import Authenticator, AuthRefusal, forbidden
from wsserver.frontdoor.gate import peer_host
from wsserver.frontdoor.principal import Admission, AuthMethod, Principal
from wsserver.frontdoor.quotas import Client, Refusal
from wsserver.frontdoor.tls import server_context
from wsserver.frontdoor.token_endpoint import PATH as CLIENT_TOKENS_PATH
from wsserver.frontdoor.token_endpoint import mint_client_token
from wsserver.registry.redis import RegistryUnavailable, WorkerInfo, WorkerRegistry
from wsserver.session.persistence import Persister
from wsserver.session.runtime import Departure, RuntimeContext, SessionRuntime
from wsserver.store.base import SessionStore, SessionStoreUnavailable
from wsserver.store.selector import open_store
from wsserver.transport.control_frames import control_frame_limited
from wsserver.transport.websocket import Connection
from wsserver.worker.sessions import SessionManager
from wsserver.worker.settings import Settings
from wsserver.worker.usage_report import usage_report

log = logging.getLogger(__name__)

PROTOCOL_VERSION = "wsserver.v1"


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
        if settings.vad == "silero":
            # Fail at startup, not at the first voice session.
            from wsserver.audio.silero import load_model

            load_model()
        self.worker_id = settings.worker_id or default_worker_id()
        # Fail at startup (FrontDoorConfigError), not at the first request.
        self.authenticator = Authenticator.from_settings(settings, settings.host)
        self.tls = (
            server_context(settings.tls_cert, settings.tls_key) if settings.tls_enabled() else None
        )
        self._admitted: weakref.WeakKeyDictionary[ServerConnection, Admission] = (
            weakref.WeakKeyDictionary()
        )
        """Who each handshake let in is, until its connection goes."""
        self._admin_server: Server | None = None
        self.engine: Engine = engine or SimulatedEngine(settings.simulated_engine())
        self.store: SessionStore = store or open_store(
            settings.store, settings.store_limits(), timeout=settings.store_timeout
        )
        self.persister = Persister(self.store, interval=settings.store_flush_ms / 1000)
        self.manager = SessionManager(self.store, self._runtime_context, settings.limits())
        self.front_door = settings.front_door(lambda session_id: session_id in self.sessions)
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
            audio_limits=self.settings.audio_limits(),
            tool_timeout=self.settings.tool_timeout,
            tool_retries=self.settings.tool_retries,
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
            process_request=self._process_request,
            compression="deflate" if settings.compression else None,
            max_size=settings.max_frame_bytes,
            ping_interval=settings.ping_interval,
            ping_timeout=settings.ping_timeout,
            close_timeout=settings.close_timeout,
            write_limit=settings.write_limit,
            # A worker's clients reconnect all at once when another worker dies.
            backlog=settings.listen_backlog,
            ssl=self.tls,
            create_connection=control_frame_limited(
                settings.max_pings_per_second, settings.max_ping_burst
            ),
        )
        if settings.admin_port:
            self._admin_server = await serve(
                _no_websocket,
                settings.admin_host,
                settings.admin_port,
                process_request=self._admin_request,
            )
        self._loops = [
            asyncio.create_task(self.persister.run(), name="store writer"),
            asyncio.create_task(self._heartbeat_loop(), name="heartbeat"),
            asyncio.create_task(self._lease_loop(), name="leases"),
        ]
        if self.store.shared:
            # Routers find workers in the same Redis as the sessions.
            self.registry = WorkerRegistry(
                settings.store,
                ttl=settings.registry_interval * 3,
                timeout=settings.store_timeout,
            )
            self._loops.append(asyncio.create_task(self._registry_loop(), name="registry"))

    @property
    def port(self) -> int:
        """The bound port (useful with ``--port 0``)."""
        assert self._server is not None, "server not started"
        sockname: tuple[str, int] = next(iter(self._server.sockets)).getsockname()
        return sockname[1]

    async def drain(self, timeout: float, force: asyncio.Event | None = None) -> None:
        """The shutdown sequence of a deploy (SIGTERM), step by step:

        1. draining: ``/readyz`` says 503, the registry says draining, new connections
           and new sessions are refused (HTTP 503, close 1013) so they go elsewhere;
        2. running responses finish, up to ``timeout`` seconds (or until ``force``);
        3. every client is told to reconnect (close 1012) and resumes on another worker;
        4. the last writes reach the store, then :meth:`stop`.
        """
        self.draining = True
        if self.registry is not None:
            # Routers stop placing new sessions here at once, not at the next interval.
            with contextlib.suppress(RegistryUnavailable):
                await self.registry.publish(self.worker_info())
        log.info("draining: up to %.0f s for %d running responses", timeout, self._running())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        # Responses end in many ways (engine, interrupt, cancel, expiry); a 50 ms poll
        # for the few seconds of a drain is simpler than a signal from each of them.
        forced = force if force is not None else asyncio.Event()
        while self._running() and loop.time() < deadline and not forced.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        for runtime in list(self.sessions.values()):
            # Ended here, explicitly and continuable, rather than lost with the worker.
            runtime.stop_running("worker_draining")
        if not self.store.shared:
            # The close stops the writers, and with the memory store no other worker can
            # replay those response.done: let the writers send them first (bounded, for
            # clients that stopped reading). A shared store's next owner replays them, and
            # a client answering at once must not start a response here.
            flush_deadline = loop.time() + self.settings.close_timeout
            while self._unsent() and loop.time() < flush_deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        for connection in list(self.connections):
            connection.close(CloseCode.SERVICE_RESTART, "service restart: resume elsewhere")
        # Numbered events of the departed clients go to the store for the new owners.
        await self.persister.flush()
        await self.stop()

    def _running(self) -> int:
        return sum(1 for r in self.sessions.values() if r.session.active is not None)

    def _unsent(self) -> bool:
        """Whether an attached session still has events its writer has not sent."""
        return any(
            bool(c.runtime.session.outbox) for c in self.connections if c.runtime is not None
        )

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
        admission = self._admitted.get(ws)
        principal = admission.principal if admission is not None else None
        quota = self.front_door.connect(self._front_door_client(ws, ws.request, principal))
        if isinstance(quota, Refusal):  # concurrent handshakes raced past the check
            await ws.close(CloseCode.CONNECTION_LIMIT_REACHED, quota.message)
            return
        connection = Connection(ws, self)
        connection.quota = quota
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)
            quota.release()

    def _front_door_client(
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
        return self._admitted.get(connection.ws)

    def principal_of(self, connection: Connection) -> Principal | None:
        """Who the connection's handshake was let in as (None: never admitted)."""
        admission = self.admission(connection)
        return admission.principal if admission is not None else None

    def _valid_principal(self, connection: Connection) -> Principal | None:
        """The connection's principal if its credential still holds; else close it."""
        principal = self.principal_of(connection)
        if principal is None:
            connection.close(CloseCode.UNAUTHORIZED, "not authenticated")
            return None
        if principal.expires_at is not None and time.time() >= principal.expires_at:
            connection.close(CloseCode.UNAUTHORIZED, "credentials expired")
            return None
        return principal

    async def _may_open(
        self, connection: Connection, principal: Principal, message: SessionStart
    ) -> bool:
        """Whether ``principal``'s credential may open one more session (else refused)."""
        if not principal.can_start:
            connection.close(CloseCode.FORBIDDEN, "this credential may not open sessions")
            return False
        if principal.token_id is None or principal.max_sessions is None:
            return True
        # Counted in the store, so the limit holds across workers; kept a minute past
        # the token's expiry, since the workers' clocks differ a little.
        ttl = max(1.0, (principal.expires_at or time.time()) - time.time() + 60)
        try:
            allowed = await self.store.use_client_token(
                principal.token_id, principal.max_sessions, ttl
            )
        except SessionStoreUnavailable:
            connection.reject(
                ProtocolViolation(
                    ErrorCode.STORE_UNAVAILABLE,
                    "session store unavailable: cannot open a session now; retry",
                    message.id,
                )
            )
            return False
        if not allowed:
            connection.close(
                CloseCode.FORBIDDEN, "this client token opened all the sessions it may"
            )
        return allowed

    async def open_session(self, connection: Connection, message: SessionStart) -> None:
        """Create a session and bind it to the connection (or refuse: draining, full)."""
        if self.draining or self.full:
            # Another worker should take it: a resumable code with a retry hint.
            why = "draining" if self.draining else "at capacity"
            connection.close(
                CloseCode.TRY_AGAIN_LATER, f"worker {why}; retry_after_ms={_RETRY_AFTER_MS}"
            )
            return
        principal = self._valid_principal(connection)
        if principal is None or not await self._may_open(connection, principal, message):
            return
        try:
            with connection.quota.session_slot() as slot:  # raises session_limit_reached
                runtime, token = await self.manager.open(message, principal.id)
                slot.session_id = runtime.session_id
        except ProtocolViolation as violation:
            violation.request_id = violation.request_id or message.id
            connection.reject(violation)
            return
        self._bind(connection, runtime, resumed=False, token=token)

    async def resume_session(self, connection: Connection, message: SessionResume) -> None:
        """Re-attach a session and replay what the client missed, or refuse explicitly."""
        principal = self._valid_principal(connection)
        if principal is None:
            return
        try:
            with connection.quota.resume_attempt(message.session_id):  # counts failed guesses
                runtime = await self.manager.resume(message, principal.id)
            events = runtime.session.replay_after(message.last_seq)
        except ProtocolViolation as violation:
            violation.request_id = violation.request_id or message.id
            connection.reject(violation)
            return
        previous = runtime.transport
        if previous is not None:
            # The old socket is half-open or obsolete; the newest connection wins.
            runtime.detach(previous, Departure.LOST)
            previous.close(CloseCode.SESSION_REPLACED, "session resumed on another connection")
        self._bind(connection, runtime, resumed=True, token=None)
        connection.start_replay(events)

    def _bind(
        self,
        connection: Connection,
        runtime: SessionRuntime,
        *,
        resumed: bool,
        token: str | None,
    ) -> None:
        runtime.attach(connection)
        connection.bind(runtime)
        settings = self.settings
        ready = connection_message(
            SESSION_READY,
            protocol=PROTOCOL_VERSION,
            session_id=runtime.session_id,
            resumed=resumed,
            last_seq=runtime.session.last_seq,
            heartbeat_interval_ms=int(settings.heartbeat_interval * 1000),
            **_audio_fields(runtime),
            **_tool_fields(runtime),
            limits={
                **runtime.session.limits.to_dict(),
                "max_frame_bytes": settings.max_frame_bytes,
                "grace_period_ms": int(settings.grace_period * 1000),
                "resume_window_ms": int(settings.resume_window * 1000),
            },
        )
        if token is not None:
            ready["resume_token"] = token
        if runtime.lost_after_seq is not None:
            ready["lost_after_seq"] = runtime.lost_after_seq
            runtime.lost_after_seq = None
        connection.send_control(ready)

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
                            HEARTBEAT, server_time_ms=now_ms, last_seq=runtime.session.last_seq
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
        # Expires by itself three intervals after the last entry: a killed worker
        # disappears from routers' lists without anyone cleaning up.
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

    # -- HTTP endpoints ----------------------------------------------------

    async def _process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        path, _, query = request.path.partition("?")
        headers = request.headers
        # get_all: a request may repeat a header (get() would raise on two Upgrade lines).
        upgrade = [value.lower() for value in headers.get_all("Upgrade")] == ["websocket"]
        if not upgrade and path in ("/healthz", "/readyz"):
            # Open to probes: they say nothing about sessions.
            return await self._probe(path)
        found = self.authenticator.authenticate(
            authorization=", ".join(headers.get_all("Authorization")) or None,
            subprotocols=", ".join(headers.get_all("Sec-WebSocket-Protocol")) or None,
            query=query,
        )
        # Counted before the credential is judged, so guessing keys is rate limited too.
        principal = found if isinstance(found, Principal) else None
        client = self._front_door_client(connection, request, principal)
        refusal = self.front_door.handshake(client, headers.get_all("Origin") if upgrade else [])
        if refusal is not None:
            retry = refusal.retry_after_header if refusal.retry_after else None
            return _json_response(refusal.status, refusal.body(), retry_after=retry)
        if isinstance(found, AuthRefusal):
            return refusal_response(found)
        if upgrade:
            return self._admit(connection, request, found, client.address)
        if path == CLIENT_TOKENS_PATH:
            status, body = mint_client_token(
                self.authenticator, self.settings, found, request.method, query
            )
            return _json_response(status, body)
        if path == "/stats" or path.startswith("/usage/"):
            if not found.admin:
                return refusal_response(forbidden(f"{path.split('/')[1]} needs an admin key"))
            return await self._admin_endpoint(path)
        return None

    def _admit(
        self, connection: ServerConnection, request: Request, principal: Principal, client_ip: str
    ) -> Response | None:
        """Let an authenticated WebSocket handshake that passed the quota gate in, or
        refuse it before the upgrade (draining, full); remember who and from where."""
        query = request.path.partition("?")[2]
        # Refuse before the upgrade, so a router can place the connection elsewhere.
        resuming = "session_id=" in query or "X-Wsserver-Session" in request.headers
        if self.draining or (self.full and not resuming):
            return _json_response(
                HTTPStatus.SERVICE_UNAVAILABLE,
                {"error": "draining" if self.draining else "at capacity"},
                retry_after=_RETRY_AFTER_MS // 1000 or 1,
            )
        self._admitted[connection] = Admission(principal, client_ip)
        return None

    async def _admin_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        """The admin listener: every read-only endpoint, no credentials, no WebSockets."""
        path = request.path.partition("?")[0]
        if path in ("/healthz", "/readyz"):
            return await self._probe(path)
        if path == "/stats" or path.startswith("/usage/"):
            return await self._admin_endpoint(path)
        return _json_response(HTTPStatus.NOT_FOUND, {"error": "no such endpoint"})

    async def _probe(self, path: str) -> Response:
        if path == "/healthz":
            return _json_response(HTTPStatus.OK, {"status": "ok"})
        ready, checks = await self.readiness()
        status = HTTPStatus.OK if ready else HTTPStatus.SERVICE_UNAVAILABLE
        return _json_response(status, {"ready": ready, **checks})

    async def _admin_endpoint(self, path: str) -> Response:
        if path == "/stats":
            return _json_response(HTTPStatus.OK, self.stats())
        return await self._usage_response(path.removeprefix("/usage/"))

    async def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready when the store answers and the worker is not draining."""
        store_ok = await self.store.ready()
        checks = {"store": store_ok, "draining": self.draining}
        return store_ok and not self.draining, checks

    async def _usage_response(self, session_id: str) -> Response:
        try:
            entries = await self.store.usage(session_id)
        except SessionStoreUnavailable:
            return _json_response(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "store unavailable"})
        if not entries:
            return _json_response(HTTPStatus.NOT_FOUND, {"error": "no usage for this session"})
        return _json_response(HTTPStatus.OK, usage_report(session_id, entries))

    def stats(self) -> dict[str, Any]:
        """Counters for monitoring and tests."""
        runtimes = list(self.sessions.values())
        return {
            "worker_id": self.worker_id,
            "sessions": len(runtimes),
            "attached": sum(1 for r in runtimes if r.transport is not None),
            "connections": len(self.connections),
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


def default_worker_id() -> str:
    """host-pid-random: unique across restarts on one host."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"


async def _no_websocket(ws: ServerConnection) -> None:
    """The admin listener's handler: never reached, every request is answered before."""
    await ws.close()


def refusal_response(refusal: AuthRefusal) -> Response:
    """HTTP 401/403 with a JSON body and ``WWW-Authenticate``, sent instead of the upgrade."""
    response = _json_response(refusal.status, refusal.body())
    response.headers["WWW-Authenticate"] = refusal.www_authenticate
    return response


def _select_subprotocol(connection: ServerConnection, offered: Any) -> Any:
    # Credential entries (wsserver.token.…) are never in SUBPROTOCOLS: never selected.
    for subprotocol in offered:
        if subprotocol in SUBPROTOCOLS:
            return subprotocol
    # No (known) subprotocol offered: JSON, so plain WebSocket tools work.
    return None


_RETRY_AFTER_MS = 1000
"""The retry hint a refusing worker gives (close 1013 reason, HTTP Retry-After)."""


def _json_response(
    status: HTTPStatus, body: dict[str, Any], *, retry_after: int | None = None
) -> Response:
    payload = json.dumps(body).encode()
    headers = Headers([("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return Response(status.value, status.phrase, headers, payload)


def _tool_fields(runtime: SessionRuntime) -> dict[str, Any]:
    """``session.ready``'s emitted calls still waiting for a result (announced again)."""
    pending = runtime.pending_tool_calls()
    return {"pending_tool_calls": pending} if pending else {}


def _audio_fields(runtime: SessionRuntime) -> dict[str, Any]:
    """``session.ready``'s audio settings and the last input chunk the server has."""
    voice = runtime.voice
    if voice is None:
        return {}
    return {"audio": voice.settings.model_dump(), "audio_in_seq": voice.input.last_seq}


def quota_principal(principal: Principal | None) -> str | None:
    """Whom the per-principal quotas count: the principal, or for a client token the token
    itself (one app user's token must not use up its account's connections, messages or
    failed resumes); ``None`` while anonymous."""
    if principal is None or principal.method is AuthMethod.NONE:
        return None
    if principal.method is AuthMethod.CLIENT_TOKEN and principal.token_id is not None:
        return f"{principal.id}#{principal.token_id}"
    return principal.id

"""The worker: a websockets server that hosts session runtimes."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Coroutine
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from protocol.codes import CloseCode, ErrorCode
from protocol.encoding import SUBPROTOCOLS
from protocol.errors import ProtocolViolation, ResumeRefused
from protocol.events import HEARTBEAT, SESSION_READY, connection_message
from protocol.messages import SessionResume, SessionStart
from protocol.server_session import ServerSession, SessionLimits
from wsserver.connection import Connection
from wsserver.engine.base import Engine
from wsserver.engine.simulated import SimulatedEngine
from wsserver.runtime import Departure, SessionRuntime
from wsserver.settings import Settings
from wsserver.store.base import (
    SessionRecord,
    SessionStore,
    hash_token,
    new_resume_token,
    token_matches,
)
from wsserver.store.memory import MemorySessionStore

log = logging.getLogger(__name__)

PROTOCOL_VERSION = "wsserver.v1"


class WorkerServer:
    """Accepts connections, opens and resumes sessions, sends heartbeats."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        engine: Engine | None = None,
        store: SessionStore | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.engine: Engine = engine or SimulatedEngine(self.settings.simulated_engine())
        self.store: SessionStore = store or MemorySessionStore()
        self.limits: SessionLimits = self.settings.limits()
        self.sessions: dict[str, SessionRuntime] = {}
        self.connections: set[Connection] = set()
        self._server: Server | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.started_at = time.time()

    # -- lifecycle -------------------------------------------------------

    async def start(self) -> None:
        """Start the engine, the listener and the heartbeat ticker."""
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
        )
        self._heartbeat = asyncio.create_task(self._heartbeat_loop(), name="heartbeat")

    @property
    def port(self) -> int:
        """The bound port (useful with ``--port 0``)."""
        assert self._server is not None, "server not started"
        sockname: tuple[str, int] = next(iter(self._server.sockets)).getsockname()
        return sockname[1]

    async def stop(self) -> None:
        """Shutdown: stop accepting, close clients with 1001, expire sessions, stop the engine."""
        if self._server is None:
            return
        self._server.close(close_connections=False)
        for connection in list(self.connections):
            connection.close(CloseCode.GOING_AWAY, "server shutting down: resume elsewhere")
        await self._server.wait_closed()
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        for runtime in list(self.sessions.values()):
            runtime.expire()
        await asyncio.gather(*self._tasks, return_exceptions=True)
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
        connection = Connection(ws, self)
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)

    async def open_session(self, connection: Connection, message: SessionStart) -> None:
        """Create a session and bind it to the connection."""
        session_id = "sess_" + secrets.token_urlsafe(16)
        token = new_resume_token()
        limits = self.limits
        if message.settings is not None and message.settings.max_output_tokens is not None:
            limits = SessionLimits(
                **{
                    **limits.to_dict(),
                    "max_output_tokens": min(
                        message.settings.max_output_tokens, limits.max_output_tokens
                    ),
                }
            )
        await self.store.create(SessionRecord(session_id, hash_token(token), time.time()))
        session = ServerSession(session_id, limits, message.instructions)
        runtime = SessionRuntime(
            session,
            self.engine,
            self.store,
            grace_period=self.settings.grace_period,
            session_ttl=self.settings.session_ttl,
            on_expire=self._expired,
        )
        self.sessions[session_id] = runtime
        self._bind(connection, runtime, resumed=False, token=token)

    async def resume_session(self, connection: Connection, message: SessionResume) -> None:
        """Re-attach a session and replay what the client missed, or refuse explicitly."""
        try:
            runtime = await self._find_resumable(message)
            events = runtime.session.replay_after(message.last_seq)
        except ProtocolViolation as violation:
            violation.request_id = violation.request_id or message.id
            connection.reject(violation)
            return
        previous = runtime.connection
        if previous is not None:
            # The old socket is half-open or obsolete; the newest connection wins.
            runtime.detach(previous, Departure.DROPPED)
            previous.runtime = None
            previous.close(CloseCode.SESSION_REPLACED, "session resumed on another connection")
        self._bind(connection, runtime, resumed=True, token=None)
        connection.start_replay(events)

    async def _find_resumable(self, message: SessionResume) -> SessionRuntime:
        runtime = self.sessions.get(message.session_id)
        record = await self.store.get(message.session_id)
        if runtime is None or record is None or runtime.closed:
            raise ResumeRefused(ErrorCode.UNKNOWN_SESSION, "no such session")
        if not token_matches(message.resume_token, record.token_hash):
            # Same answer shape as an unknown session would leak nothing more.
            raise ResumeRefused(ErrorCode.INVALID_RESUME_TOKEN, "resume token does not match")
        return runtime

    def _bind(
        self,
        connection: Connection,
        runtime: SessionRuntime,
        *,
        resumed: bool,
        token: str | None,
    ) -> None:
        runtime.attach(connection)
        connection.runtime = runtime
        ready = connection_message(
            SESSION_READY,
            protocol=PROTOCOL_VERSION,
            session_id=runtime.session_id,
            resumed=resumed,
            last_seq=runtime.session.last_seq,
            heartbeat_interval_ms=int(self.settings.heartbeat_interval * 1000),
            limits={
                **runtime.session.limits.to_dict(),
                "max_frame_bytes": self.settings.max_frame_bytes,
                "grace_period_ms": int(self.settings.grace_period * 1000),
                "session_ttl_ms": int(self.settings.session_ttl * 1000),
            },
        )
        if token is not None:
            ready["resume_token"] = token
        connection.send_control(ready)

    def _expired(self, runtime: SessionRuntime) -> None:
        self.sessions.pop(runtime.session_id, None)
        self.spawn(self.store.remove(runtime.session_id))

    # -- heartbeats ------------------------------------------------------

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

    # -- HTTP endpoints ----------------------------------------------------

    async def _process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/healthz":
            return _json_response(HTTPStatus.OK, {"status": "ok"})
        if path == "/readyz":
            ready = await self.store.ready()
            status = HTTPStatus.OK if ready else HTTPStatus.SERVICE_UNAVAILABLE
            return _json_response(status, {"ready": ready})
        if path == "/stats":
            return _json_response(HTTPStatus.OK, self.stats())
        return None

    def stats(self) -> dict[str, Any]:
        """Counters for monitoring and tests."""
        runtimes = list(self.sessions.values())
        return {
            "sessions": len(runtimes),
            "attached": sum(1 for r in runtimes if r.connection is not None),
            "connections": len(self.connections),
            "outbox_bytes_max": max((r.session.outbox.nbytes for r in runtimes), default=0),
            "outbox_peak_bytes_max": max(
                (r.session.outbox.peak_bytes for r in runtimes), default=0
            ),
            "engine": self.engine.stats(),
            "uptime_s": round(time.time() - self.started_at, 3),
        }


def _select_subprotocol(connection: ServerConnection, offered: Any) -> Any:
    for subprotocol in offered:
        if subprotocol in SUBPROTOCOLS:
            return subprotocol
    # No (known) subprotocol offered: JSON, so plain WebSocket tools work.
    return None


def _json_response(status: HTTPStatus, body: dict[str, Any]) -> Response:
    payload = json.dumps(body).encode()
    headers = Headers([("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return Response(status.value, status.phrase, headers, payload)

"""The answers to ``session.start`` and ``session.resume``: open, re-attach or refuse.

A new session is refused when the worker drains or is full (close 1013 with a retry
hint, so the client goes elsewhere), when the credential expired or may not open
sessions, or when a client token used up its sessions. A resume re-attaches the
session (replacing an older connection) and replays what the client missed. Either
way the client gets one ``session.ready`` with the session's limits.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from protocol.codes import CloseCode, ErrorCode
from protocol.errors import ProtocolViolation
from protocol.events import SESSION_READY, connection_message
from protocol.messages import SessionResume, SessionStart
from wsserver.frontdoor.principal import Principal
from wsserver.metrics import WorkerMetrics
from wsserver.session.runtime import Departure, SessionRuntime
from wsserver.store.base import SessionStore, SessionStoreUnavailable
from wsserver.telemetry import bind_session
from wsserver.transport.websocket import Connection
from wsserver.worker.session_manager import ResumeVetoed, SessionManager
from wsserver.worker.settings import Settings

PROTOCOL_VERSION = "wsserver.v1"

RETRY_AFTER_MS = 1000
"""The retry hint a refusing worker gives (close 1013 reason, HTTP Retry-After)."""


class HandshakeHost(Protocol):
    """What the answers need of the worker."""

    settings: Settings
    store: SessionStore
    manager: SessionManager
    draining: bool
    metrics: WorkerMetrics

    @property
    def full(self) -> bool:
        """Whether the worker is at its session limit."""
        ...

    def principal_of(self, connection: Connection) -> Principal | None:
        """Who the connection's handshake was let in as (None: never admitted)."""
        ...


async def open_session(host: HandshakeHost, connection: Connection, message: SessionStart) -> None:
    """Create a session and bind it to the connection (or refuse: draining, full)."""
    if host.draining or host.full:
        # Another worker should take it: a resumable code with a retry hint.
        why = "draining" if host.draining else "at capacity"
        connection.close(
            CloseCode.TRY_AGAIN_LATER, f"worker {why}; retry_after_ms={RETRY_AFTER_MS}"
        )
        return
    principal = _valid_principal(host, connection)
    if principal is None or not await _may_open(host, connection, principal, message):
        return
    try:
        with connection.quota.session_slot() as slot:  # raises session_limit_reached
            runtime, token = await host.manager.open(message, principal.id)
            slot.session_id = runtime.session_id
    except ProtocolViolation as violation:
        violation.request_id = violation.request_id or message.id
        connection.reject(violation)
        return
    _bind(host.settings, connection, runtime, resumed=False, token=token)


async def resume_session(
    host: HandshakeHost, connection: Connection, message: SessionResume
) -> None:
    """Re-attach a session and replay what the client missed, or refuse explicitly."""
    principal = _valid_principal(host, connection)
    if principal is None:
        return
    try:
        with connection.quota.resume_attempt(message.session_id):  # counts failed guesses
            runtime = await host.manager.resume(
                message, principal.id, connection.stored_resume_check()
            )
        events = runtime.session.replay_after(message.last_seq)
    except ResumeVetoed:
        return  # refused by the connection's dialect; the session stays with its owner
    except ProtocolViolation as violation:
        _refuse_resume(host, connection, message, violation)
        return
    if not connection.vet_resume(runtime):
        return  # refused by the connection's dialect; the session is left as it was
    previous = runtime.transport
    if previous is not None:
        # The old socket is half-open or obsolete; the newest connection wins.
        runtime.detach(previous, Departure.LOST)
        previous.close(CloseCode.SESSION_REPLACED, "session resumed on another connection")
        # Detached with a shared log, the session numbered what the old writer had not
        # sent (for the store): that is replayed too, or it would be a hole. It can have
        # pushed what the client misses out of the buffer: refused then, the session
        # left resumable.
        try:
            events = runtime.session.replay_after(message.last_seq)
        except ProtocolViolation as violation:
            _refuse_resume(host, connection, message, violation)
            return
    _bind(host.settings, connection, runtime, resumed=True, token=None)
    if connection.start_replay(events):  # else refused there, and counted as refused
        host.metrics.resumed(len(events))


def _refuse_resume(
    host: HandshakeHost, connection: Connection, message: SessionResume, why: ProtocolViolation
) -> None:
    host.metrics.resume_refused(why.code.value)
    why.request_id = why.request_id or message.id
    connection.reject(why)


def _valid_principal(host: HandshakeHost, connection: Connection) -> Principal | None:
    """The connection's principal if its credential still holds; else close it."""
    principal = host.principal_of(connection)
    if principal is None:
        connection.close(CloseCode.UNAUTHORIZED, "not authenticated")
        return None
    if principal.expires_at is not None and time.time() >= principal.expires_at:
        connection.close(CloseCode.UNAUTHORIZED, "credentials expired")
        return None
    return principal


async def _may_open(
    host: HandshakeHost, connection: Connection, principal: Principal, message: SessionStart
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
        allowed = await host.store.use_client_token(principal.token_id, principal.max_sessions, ttl)
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
        connection.close(CloseCode.FORBIDDEN, "this client token opened all the sessions it may")
    return allowed


def _bind(
    settings: Settings,
    connection: Connection,
    runtime: SessionRuntime,
    *,
    resumed: bool,
    token: str | None,
) -> None:
    runtime.attach(connection)
    connection.bind(runtime)
    bind_session(runtime.session_id)  # the reader's lines from now on name the session
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

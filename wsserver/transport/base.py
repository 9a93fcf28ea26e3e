"""The Transport interface: what a session runtime needs from the connection it serves.

The runtime never talks to a WebSocket: it wakes the transport's writer,
closes it with a code, and the transport pulls numbered events from the
runtime (``SessionRuntime.next_event``) at its own pace. The WebSocket
implementation is :class:`wsserver.transport.websocket.Connection`; the in-process
one is :class:`wsserver.transport.memory.MemoryTransport`.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Protocol

from protocol.codes import CLOSE_CODES, CloseCode, Disposition
from protocol.errors import ProtocolViolation
from protocol.events import Event
from protocol.messages import SessionResume, SessionStart
from protocol.session.inputs import Departure, SessionMessage
from protocol.session.state import ServerSession
from wsserver.frontdoor.gate import FrontDoor
from wsserver.metrics import WorkerMetrics


class Transport(Protocol):
    """One client connection as a session runtime sees it."""

    def wake(self) -> None:
        """There are events to send: the writer pulls them."""
        ...

    def close(self, code: CloseCode, text: str) -> None:
        """Stop sending session events and close with ``code`` (in the background).

        The transport tells the runtime how it left (``SessionRuntime.detach``)
        unless the runtime let it go first.
        """
        ...


class SessionEndpoint(Protocol):
    """The session runtime as a transport sees it (``wsserver.session.runtime.SessionRuntime``)."""

    @property
    def session_id(self) -> str:
        """The session's id."""
        ...

    @property
    def last_seq(self) -> int:
        """Seq of the newest numbered event."""
        ...

    @property
    def session(self) -> ServerSession:
        """The session's state (a dialect's resume reads its replay buffer)."""
        ...

    transport: Transport | None
    """The connection the session is live on, if any."""

    @property
    def has_unsent(self) -> bool:
        """Whether events wait in the outbox for the writer."""
        ...

    @property
    def acked_seq(self) -> int:
        """The newest seq the client acknowledged."""
        ...

    def attach(self, transport: Transport) -> Transport | None:
        """Bind ``transport``; the one it replaced, if any."""
        ...

    def detach(self, transport: Transport, departure: Departure, *, reason: str = ...) -> None:
        """``transport`` went away (``departure`` says how)."""
        ...

    def handle(self, message: SessionMessage) -> None:
        """A client message of the session (never awaits anything)."""
        ...

    def reject(self, violation: ProtocolViolation) -> None:
        """A refused client message: an in-band error, in seq order."""
        ...

    def audio_frame(self, frame: bytes) -> None:
        """A binary audio frame."""
        ...

    def next_event(self) -> Event | None:
        """The next event to send, numbered and kept for replay (``None``: nothing now)."""
        ...

    def settle(self, *, include_unsent: bool = False) -> None:
        """A ``response.done`` was sent: its usage goes to the ledger."""
        ...


class ConnectionSettings(Protocol):
    """The worker settings a WebSocket connection reads."""

    @property
    def max_messages_per_second(self) -> float: ...
    @property
    def max_message_burst(self) -> int: ...
    @property
    def socket_send_buffer(self) -> int: ...
    @property
    def close_timeout(self) -> float: ...
    @property
    def slow_consumer_close_timeout(self) -> float: ...
    @property
    def handshake_timeout(self) -> float: ...
    @property
    def ack_timeout(self) -> float: ...
    @property
    def ack_window(self) -> int: ...


class ConnectionHost(Protocol):
    """What a WebSocket connection needs from its worker (``wsserver.worker.server``)."""

    @property
    def settings(self) -> ConnectionSettings:
        """The worker's settings."""
        ...

    @property
    def front_door(self) -> FrontDoor:
        """Quotas of the connection's principal."""
        ...

    @property
    def metrics(self) -> WorkerMetrics:
        """The worker's metrics (closes by code)."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` in a task the worker keeps (and cancels at shutdown)."""
        ...

    async def open_session(self, connection: Any, message: SessionStart) -> None:
        """``session.start`` on ``connection``."""
        ...

    async def resume_session(self, connection: Any, message: SessionResume) -> None:
        """``session.resume`` on ``connection``."""
        ...


def departure_for(code: CloseCode) -> Departure:
    """How a session is left when its transport closes with ``code``.

    A terminal code ends the session; any other leaves it resumable, its running
    response generating on for the grace period.
    """
    terminal = CLOSE_CODES[code].disposition is Disposition.TERMINAL
    return Departure.ENDED if terminal else Departure.LOST

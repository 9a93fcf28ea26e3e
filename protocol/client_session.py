"""The client side of a session, as a state machine with no I/O.

It removes duplicates by ``seq``, remembers the last seq seen, notices a
response that can no longer finish (truncated), decides from a close code
whether to reconnect, and builds the resume request.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import Any

from protocol.codes import Disposition, ErrorCode, close_disposition
from protocol.errors import ProtocolError

TRUNCATED = "response.truncated"
"""Synthetic event the client state machine hands the application (never on the wire)."""

# Error codes answering a resume that mean the session cannot go on.
_RESUME_FATAL = frozenset(
    {
        ErrorCode.UNKNOWN_SESSION.value,
        ErrorCode.INVALID_RESUME_TOKEN.value,
        ErrorCode.REPLAY_UNAVAILABLE.value,
        ErrorCode.INVALID_SEQ.value,
    }
)


class ClientState(enum.Enum):
    """Where the client session stands."""

    NEW = "new"
    OPENING = "opening"
    OPEN = "open"
    DISCONNECTED = "disconnected"
    RESUMING = "resuming"
    CLOSED = "closed"


_ENDED_KEPT = 64
"""Ended responses remembered, to drop a second end of one (see ``ClientSession.ended``)."""


class SequenceGap(ProtocolError):
    """The server skipped a seq: a server bug, never papered over."""


class ClientSession:
    """Dedup, last-seen tracking, truncation detection and resume decisions."""

    def __init__(self, ack_every: int = 32) -> None:
        self.state = ClientState.NEW
        self.session_id: str | None = None
        self.resume_token: str | None = None
        self.last_seq = 0
        self.acked_seq = 0
        self.ack_every = ack_every
        self.duplicates = 0
        self.open_responses: list[str] = []
        self.created_seq: dict[str, int] = {}
        """Seq of each open response's ``response.created``."""
        self.ended: deque[str] = deque(maxlen=_ENDED_KEPT)
        """The last responses the application saw end (``response.done`` or truncated).

        A worker that died after its client saw a response's ``response.done``, and
        before storing it, leaves the response running in the store: the worker that
        takes the session over ends it ``failed``. That second end is dropped (counted
        in ``duplicate_ends``), so the application sees each response end once.
        """
        self.duplicate_ends = 0
        self.close_code: int | None = None

    # -- outgoing --------------------------------------------------------

    def start_message(self, **fields: Any) -> dict[str, Any]:
        """The ``session.start`` to send on a fresh connection."""
        self.state = ClientState.OPENING
        message: dict[str, Any] = {"type": "session.start"}
        message.update({k: v for k, v in fields.items() if v is not None})
        return message

    def resume_message(self) -> dict[str, Any]:
        """The ``session.resume`` to send after reconnecting."""
        if self.session_id is None or self.resume_token is None:
            raise ProtocolError("no session to resume")
        self.state = ClientState.RESUMING
        return {
            "type": "session.resume",
            "session_id": self.session_id,
            "resume_token": self.resume_token,
            "last_seq": self.last_seq,
        }

    def ack_message(self, force: bool = False) -> dict[str, Any] | None:
        """An ``ack`` if enough events arrived since the last one (or ``force``)."""
        if self.last_seq > self.acked_seq and (
            force or self.last_seq - self.acked_seq >= self.ack_every
        ):
            self.acked_seq = self.last_seq
            return {"type": "ack", "seq": self.last_seq}
        return None

    # -- incoming --------------------------------------------------------

    def receive(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Feed one decoded server message; returns what the application should see."""
        seq = message.get("seq")
        msg_type = message.get("type")
        if msg_type == "session.ready":
            return self._on_ready(message)
        if not isinstance(seq, int):
            if msg_type == "error" and self.state is ClientState.RESUMING:
                return self._on_resume_error(message)
            return [message]
        if seq <= self.last_seq:
            self.duplicates += 1
            return []
        if seq != self.last_seq + 1:
            raise SequenceGap(f"expected seq {self.last_seq + 1}, got {seq}")
        self.last_seq = seq
        response_id = message.get("response_id")
        if msg_type == "response.created" and isinstance(response_id, str):
            self.open_responses.append(response_id)
            self.created_seq[response_id] = seq
        elif msg_type == "response.done" and isinstance(response_id, str):
            if response_id in self.open_responses:
                self._forget(response_id)
            elif response_id in self.ended:
                self.duplicate_ends += 1
                return []
        return [message]

    def _forget(self, response_id: str) -> None:
        """The response ended for the application."""
        if response_id in self.open_responses:
            self.open_responses.remove(response_id)
        self.created_seq.pop(response_id, None)
        self.ended.append(response_id)

    def _on_ready(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        session_id = message.get("session_id")
        if self.state is ClientState.RESUMING and session_id == self.session_id:
            self.state = ClientState.OPEN
            lost_after = message.get("lost_after_seq")
            if isinstance(lost_after, int):
                # The old worker died before storing what came after: a response the
                # client saw start there is unknown to the new one and never ends.
                return [message, *self._truncate_created_after(lost_after)]
            return [message]
        self.session_id = session_id if isinstance(session_id, str) else None
        token = message.get("resume_token")
        self.resume_token = token if isinstance(token, str) else None
        self.last_seq = int(message.get("last_seq", 0))
        self.acked_seq = self.last_seq
        self.state = ClientState.OPEN
        return [message]

    def _on_resume_error(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("code") not in _RESUME_FATAL:
            return [message]
        self.state = ClientState.CLOSED
        return [message, *self._truncate_open("resume_failed")]

    # -- connection loss -------------------------------------------------

    def connection_lost(self, close_code: int | None) -> Disposition:
        """The connection closed; decide whether to reconnect and resume."""
        self.close_code = close_code
        if self.state is ClientState.CLOSED:
            return Disposition.TERMINAL
        disposition = close_disposition(close_code)
        if self.session_id is None or self.resume_token is None:
            # Nothing to resume: the session never opened.
            disposition = Disposition.TERMINAL
        self.state = (
            ClientState.DISCONNECTED if disposition is Disposition.RESUME else ClientState.CLOSED
        )
        return disposition

    def give_up(self, reason: str) -> list[dict[str, Any]]:
        """Stop for good; returns a truncation event for every unfinished response."""
        self.state = ClientState.CLOSED
        return self._truncate_open(reason)

    def _truncate_created_after(self, seq: int) -> list[dict[str, Any]]:
        lost = [rid for rid in self.open_responses if self.created_seq.get(rid, 0) > seq]
        for rid in lost:
            self._forget(rid)
        return [{"type": TRUNCATED, "response_id": rid, "reason": "worker_lost"} for rid in lost]

    def _truncate_open(self, reason: str) -> list[dict[str, Any]]:
        events = [
            {"type": TRUNCATED, "response_id": rid, "reason": reason} for rid in self.open_responses
        ]
        for event in events:
            self._forget(event["response_id"])
        return events

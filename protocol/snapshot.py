"""Session snapshots: what a store keeps so another worker can take a session over.

A snapshot has two parts written at different rates: the conversation (rewritten
only when a turn changes) and the stream state (last seq and the running
response's counters, small, written with every batch of events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.conversation import Turn
from protocol.events import Event
from protocol.session.lifecycle import Phase
from protocol.session.responses import ResponseState, ResponseStatus, SessionLimits
from protocol.session.state import ServerSession


@dataclass(slots=True)
class ConversationSnapshot:
    """The conversation, the limits and the latest ended response."""

    instructions: str | None
    limits: dict[str, int]
    turns: list[list[Any]]
    """Turns in their wire form (:meth:`Turn.to_wire`)."""
    response_count: int
    last_response: dict[str, Any] | None
    version: int
    queued: list[str] = field(default_factory=list)
    """User turns sent during the running response, not in ``turns`` yet."""
    audio: dict[str, Any] | None = None
    """The session's audio settings, so a new owner keeps its voice."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The session's tool declarations."""
    tool_rounds: str = "server"
    """Who starts a tool loop's next round (``server`` or ``client``)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "instructions": self.instructions,
            "limits": self.limits,
            "turns": self.turns,
            "response_count": self.response_count,
            "last_response": self.last_response,
            "version": self.version,
            "queued": self.queued,
            "audio": self.audio,
            "tools": self.tools,
            "tool_rounds": self.tool_rounds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversationSnapshot:
        """Inverse of :meth:`to_dict`."""
        return cls(
            instructions=data.get("instructions"),
            limits=dict(data["limits"]),
            turns=[list(t) for t in data["turns"]],
            response_count=int(data["response_count"]),
            last_response=data.get("last_response"),
            version=int(data.get("version", 0)),
            queued=[str(t) for t in data.get("queued", [])],
            audio=data.get("audio"),
            tools=list(data.get("tools") or []),
            tool_rounds="client" if data.get("tool_rounds") == "client" else "server",
        )

    def public(self) -> dict[str, Any]:
        """What a client may see when its session cannot be resumed."""
        return {
            "conversation": [_public_turn(Turn.from_wire(t)) for t in self.turns],
            "last_response": self.last_response,
        }


@dataclass(slots=True)
class StreamSnapshot:
    """Seq and the running response's counters as of the last persisted event."""

    last_seq: int
    active: dict[str, Any] | None
    requests: list[list[str]] = field(default_factory=list)
    """Recent request ids and the responses they started (a resend is refused)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (built by hand: this runs on every store write)."""
        return {"last_seq": self.last_seq, "active": self.active, "requests": self.requests}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StreamSnapshot:
        """Inverse of :meth:`to_dict`."""
        return cls(
            last_seq=int(data["last_seq"]),
            active=data.get("active"),
            requests=[[str(a), str(b)] for a, b in data.get("requests") or []],
        )


def _public_turn(turn: Turn) -> dict[str, Any]:
    public: dict[str, Any] = {"role": turn.role, "text": turn.text}
    if turn.tool_calls:
        public["tool_calls"] = [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments}
            for c in turn.tool_calls
        ]
    if turn.tool_call_id is not None:
        public["tool_call_id"] = turn.tool_call_id
    return public


def conversation_snapshot(session: ServerSession) -> ConversationSnapshot:
    """Snapshot of the conversation part."""
    last = session.last_response
    return ConversationSnapshot(
        instructions=session.conversation.instructions,
        limits=session.limits.to_dict(),
        turns=[t.to_wire() for t in session.conversation.turns],
        response_count=session.response_count,
        last_response=(
            {
                "response_id": last.id,
                "status": last.status.value if last.status else None,
                "reason": last.reason,
                "text": last.history_text or "",
                **_overrides(last),
            }
            if last is not None and last.done
            else None
        ),
        version=session.conversation.version,
        queued=list(session.queued_user_turns),
        audio=session.audio,
        tools=list(session.tools.tools.values()),
        tool_rounds=session.tool_rounds,
    )


def stream_snapshot(session: ServerSession) -> StreamSnapshot:
    """Snapshot of the stream part."""
    active = session.active
    return StreamSnapshot(
        last_seq=session.last_seq,
        active=(
            {
                "response_id": active.id,
                "input_tokens": active.input_tokens,
                "generated_tokens": active.generated_tokens,
                "delivered_tokens": active.delivered_tokens,
                "max_output_tokens": active.max_output_tokens,
                "prefix": active.prefix,
                "continues": active.continues,
                **_overrides(active),
            }
            if active is not None
            else None
        ),
        requests=[[k, v] for k, v in session.recent_requests.items()],
    )


def restore_session(
    session_id: str,
    conversation: ConversationSnapshot,
    stream: StreamSnapshot,
    replay: list[Event],
    *,
    client_last_seq: int,
    partial_text: str,
) -> tuple[ServerSession, ResponseState | None]:
    """Rebuild a session on a new owner.

    ``replay`` holds persisted events (all the store kept, or those after
    ``client_last_seq``; the resume sends only those after it). Numbering
    continues after the larger of the store's and the client's last seq: a
    client may hold events its old worker never persisted, and a new event must
    never reuse their numbers. Returns the session and the response that was
    running on the old owner (still open; the caller ends it).
    """
    limits = SessionLimits(**conversation.limits)
    session = ServerSession(session_id, limits, conversation.instructions)
    for wire in conversation.turns:
        session.conversation.append(Turn.from_wire(wire))
    session.conversation.version = conversation.version
    session.queued_user_turns = list(conversation.queued)
    session.audio = conversation.audio
    for request_id, response_id in stream.requests:
        session.recent_requests[request_id] = response_id
    session.tools.set_tools(conversation.tools)
    session.tool_rounds = "client" if conversation.tool_rounds == "client" else "server"
    session.response_count = conversation.response_count
    if conversation.last_response is not None:
        session.last_response = _ended_response(conversation.last_response, limits)
    if replay:
        session.replay.start_after(replay[0].seq - 1)
        for event in replay:
            session.replay.append(event)
    else:
        session.replay.start_after(max(stream.last_seq, client_last_seq))
    lost = None
    if stream.active is not None:
        lost = _running_response(stream.active, partial_text)
        session.active = lost
        session.responses[lost.id] = lost
        session.usage.input_tokens += lost.input_tokens
        session.usage.output_tokens_generated += lost.generated_tokens
        session.usage.output_tokens_delivered += lost.delivered_tokens
    return session, lost


def _ended_response(data: dict[str, Any], limits: SessionLimits) -> ResponseState:
    response = ResponseState(str(data["response_id"]), limits.max_output_tokens)
    status = data.get("status")
    response.status = ResponseStatus(status) if status else ResponseStatus.COMPLETED
    response.phase = Phase.ENDED  # restored as it was, not moved through the lifecycle
    response.reason = data.get("reason")
    response.history_text = data.get("text") or None
    response.usage_recorded = True
    _restore_overrides(response, data)
    return response


def _running_response(data: dict[str, Any], partial_text: str) -> ResponseState:
    response = ResponseState(str(data["response_id"]), int(data["max_output_tokens"]))
    response.input_tokens = int(data["input_tokens"])
    response.generated_tokens = int(data["generated_tokens"])
    response.delivered_tokens = int(data["delivered_tokens"])
    response.prefix = str(data.get("prefix") or "")
    response.continues = data.get("continues")
    _restore_overrides(response, data)
    if partial_text:
        # What the store has is all anyone can vouch for: it is the response's text now.
        response.restore_text(partial_text)
    return response


def _overrides(response: ResponseState) -> dict[str, Any]:
    """A response's ``response.create`` overrides, stored so a continuation keeps them."""
    overrides = response.overrides()
    return {"overrides": overrides} if overrides else {}


def _restore_overrides(response: ResponseState, data: dict[str, Any]) -> None:
    overrides = data.get("overrides")
    if isinstance(overrides, dict):
        response.set_overrides(overrides)

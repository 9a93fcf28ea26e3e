"""The server side of a session: numbering, replay, responses, history and usage.

The state the session core (:mod:`protocol.session.core`) decides over; no I/O.
Each response gets exactly one ``response.done``, built complete when it is
queued. Events are numbered when they leave the outbox (``next_event``), into
the replay buffer.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from protocol.audio_frame import response_stream_id
from protocol.codes import ErrorCode
from protocol.conversation import Conversation, Turn
from protocol.errors import ProtocolViolation
from protocol.events import (
    ERROR,
    RESPONSE_CREATED,
    RESPONSE_DONE,
    Event,
    error_fields,
)
from protocol.messages import ToolRounds
from protocol.outbox import Outbox
from protocol.replay import ReplayBuffer
from protocol.session.history import (
    cut_to_heard,
    record_ending,
    take_continued_turn,
    trim_history,
)
from protocol.session.lifecycle import Phase, Trigger
from protocol.session.numbering import number_next
from protocol.session.responses import ResponseState, ResponseStatus, SessionLimits
from protocol.session.structured_output import parse_structured_output
from protocol.tool_loop import ToolLoop
from protocol.usage import Usage

_RECENT_REQUESTS = 16


class ServerSession:
    """Seq numbering, replay, response lifecycle and usage of one session."""

    # Thousands live per worker: no per-instance __dict__.
    __slots__ = (
        "active",
        "audio",
        "conversation",
        "keep_unpersisted",
        "last_response",
        "limits",
        "outbox",
        "queued_user_turns",
        "recent_requests",
        "replay",
        "response_count",
        "responses",
        "session_id",
        "settled",
        "tool_rounds",
        "tools",
        "unpersisted",
        "usage",
    )

    def __init__(
        self, session_id: str, limits: SessionLimits, instructions: str | None = None
    ) -> None:
        self.session_id = session_id
        self.limits = limits
        self.conversation = Conversation(instructions)
        self.outbox = Outbox()
        self.replay = ReplayBuffer(limits.replay_max_events, limits.replay_max_bytes)
        self.usage = Usage()
        self.active: ResponseState | None = None
        self.responses: dict[str, ResponseState] = {}
        """Responses whose ``response.done`` has not left the outbox yet."""
        self.last_response: ResponseState | None = None
        self.settled: list[ResponseState] = []
        """Responses whose ``response.done`` was sent; their usage is final."""
        self.response_count = 0
        self.queued_user_turns: list[str] = []
        """User turns sent while a response runs; they follow its answer in the history."""
        self.unpersisted: list[Event] = []
        """Numbered events not yet written to the session store (oldest first)."""
        self.keep_unpersisted = True
        """Off when no store keeps a replay log (a single-process store)."""
        self.audio: dict[str, Any] | None = None
        """The session's audio settings (wire form) when it was started with audio."""
        self.tools = ToolLoop()
        self.tool_rounds: ToolRounds = "server"  # who starts a tool loop's next round
        self.recent_requests: OrderedDict[str, str] = OrderedDict()
        """Request id → the response it started (the latest few): a resend is refused."""

    # -- client commands -------------------------------------------------

    def add_user_text(self, text: str) -> None:
        """Append a user turn."""
        if len(text) > self.limits.max_input_chars:
            raise ProtocolViolation(
                ErrorCode.INPUT_TOO_LONG,
                f"input has {len(text)} characters, the limit is {self.limits.max_input_chars}",
            )
        if self.active is not None:
            # Keep the history in order: this turn follows the running answer.
            self.queued_user_turns.append(text)
            self.conversation.version += 1  # a store must see it (takeover)
        else:
            self.conversation.add("user", text)
            trim_history(self)

    def check_new_request(self, request_id: str | None) -> None:
        """Refuse a response request whose id already started one (a resend after a drop)."""
        if request_id is not None and request_id in self.recent_requests:
            raise ProtocolViolation(
                ErrorCode.DUPLICATE_REQUEST,
                f"request {request_id} already started {self.recent_requests[request_id]}",
                details={"response_id": self.recent_requests[request_id]},
            )

    def check_idle(self) -> None:
        """Raise ``response_in_progress`` if a response is running."""
        if self.active is not None:
            raise ProtocolViolation(
                ErrorCode.RESPONSE_IN_PROGRESS, f"response {self.active.id} is still running"
            )

    def begin_response(
        self, max_output_tokens: int | None = None, request_id: str | None = None
    ) -> ResponseState:
        """Start a response; queues ``response.created`` (echoing the request's id)."""
        self.check_idle()
        if not self.conversation.awaiting_answer:
            raise ProtocolViolation(
                ErrorCode.NOTHING_TO_ANSWER, "add a user turn (input.text) before response.create"
            )
        return self._new_response(max_output_tokens, request_id)

    def _new_response(
        self,
        max_output_tokens: int | None,
        request_id: str | None,
        continues: str | None = None,
    ) -> ResponseState:
        limit = self.limits.max_output_tokens
        wanted = min(max_output_tokens or limit, limit)
        self.response_count += 1
        response = ResponseState(f"resp_{self.response_count}", wanted, continues=continues)
        if request_id is not None:
            self.recent_requests[request_id] = response.id
            while len(self.recent_requests) > _RECENT_REQUESTS:
                self.recent_requests.popitem(last=False)
        self.active = response
        self.responses[response.id] = response
        fields: dict[str, object] = {"response_id": response.id}
        if request_id is not None:
            fields["request_id"] = request_id
        if continues is not None:
            fields["continues"] = continues
        self.outbox.push(Event(RESPONSE_CREATED, fields, response_id=response.id))
        return response

    def continue_response(
        self,
        response_id: str,
        max_output_tokens: int | None = None,
        request_id: str | None = None,
    ) -> ResponseState:
        """Start a response that continues an unfinished one from its delivered text.

        Allowed for the latest response when it ended failed, incomplete or
        interrupted and nothing was said after it.
        """
        self.check_idle()
        prefix = take_continued_turn(self, response_id)
        continued = self.last_response
        response = self._new_response(max_output_tokens, request_id, continues=response_id)
        response.prefix = prefix
        if continued is not None:  # it goes on as asked for: own instructions, tools, voice
            response.set_overrides(continued.overrides())
        return response

    def check_active(self, response_id: str | None) -> ResponseState:
        """The running response (matching ``response_id`` when given)."""
        active = self.active
        if active is None:
            raise ProtocolViolation(ErrorCode.NO_ACTIVE_RESPONSE, "no response is running")
        if response_id is not None and response_id != active.id:
            raise ProtocolViolation(
                ErrorCode.NO_ACTIVE_RESPONSE,
                f"response {response_id} is not running (running: {active.id})",
            )
        return active

    # -- engine output ---------------------------------------------------

    def record_output(
        self,
        response: ResponseState,
        text: str,
        tokens: int,
        audio: bytes = b"",
        audio_ms: float = 0.0,
    ) -> None:
        """Queue generated text (and the audio that speaks it) of a running response."""
        response.generated_tokens += tokens
        self.usage.output_tokens_generated += tokens
        if response.phase is Phase.ENDED:  # response.done, without the property call
            # Output that raced with an abort: counted, never sent.
            return
        if text:
            response.generated.append(text)
            self.outbox.push_text(response.id, text, tokens)
            if response.output_json is not None:
                parse_structured_output(self.outbox, response, text)
        if audio:
            ends = response.audio_ends_ms
            ends.append((ends[-1] if ends else 0.0) + audio_ms)
            response.audio_ends_chars.append(response.generated_chars)
            self.outbox.push_audio(response.id, response_stream_id(response.id), audio, audio_ms)

    def report_played(self, response_id: str, played_ms: int) -> ResponseState:
        """The client played ``played_ms`` of a response's audio.

        Clamped to the audio actually sent (a report past it is not an error). For
        an interrupted response that is still the latest, while no other answer
        runs, the assistant turn it left is cut again to what was heard (and to its
        ``rendered_chars``): the report after a barge-in is exact where the
        server's estimate at the time was not. The running response and the
        latest ended one take reports; any other is ``unknown_response``.
        """
        # The previous answer may still be playing when the next one starts.
        candidates = (r for r in (self.active, self.last_response) if r is not None)
        response = next((r for r in candidates if r.id == response_id), None)
        if response is None:
            raise ProtocolViolation(
                ErrorCode.UNKNOWN_RESPONSE,
                f"{response_id} is neither the running nor the latest response",
            )
        response.played_ms = max(0, min(played_ms, int(response.audio_sent_ms)))
        cut_to_heard(self, response)
        return response

    def push_event(self, type: str, fields: dict[str, object]) -> None:
        """Queue a session event that belongs to no response (input audio events)."""
        self.outbox.push(Event(type, fields))

    def count_engine_tokens(self, response: ResponseState, generated_tokens: int) -> None:
        """The current engine request's own count of the tokens it generated.

        Where it exceeds the tokens its chunks carried since the request started (an
        upstream's usage counts tokens a chunk did not show, such as the end token), the
        difference joins the response's and the session's counts; never lowers them.
        """
        seen = response.generated_tokens - response.round_start_tokens
        if generated_tokens > seen:
            self.usage.output_tokens_generated += generated_tokens - seen
            response.generated_tokens += generated_tokens - seen
        # A second call with the same count adds nothing: ``seen`` includes the first.

    def end_response(
        self,
        response: ResponseState,
        status: ResponseStatus,
        *,
        reason: str | None = None,
        input_tokens: int | None = None,
        generated_tokens: int | None = None,
        rendered_chars: int | None = None,
        played_ms: int | None = None,
        details: dict[str, object] | None = None,
    ) -> bool:
        """End a response with ``status``; queues its single ``response.done``, complete.

        ``generated_tokens`` is the current engine request's own count when it knows
        better than the sum of its chunks seen here (:meth:`count_engine_tokens`);
        ``details`` are further fields of the done (an ``error``, a lost response's
        ``persisted_chars``). Returns
        ``False`` if it had already ended (a second end is ignored: one ``done``
        per response).
        """
        if response.done:
            return False
        response.status = status
        response.reason = reason
        if input_tokens is not None:
            self.usage.input_tokens += input_tokens - response.input_tokens
            response.input_tokens = input_tokens
        if generated_tokens is not None:
            self.count_engine_tokens(response, generated_tokens)
        if status in (ResponseStatus.INTERRUPTED, ResponseStatus.CANCELLED):
            # Unsent output of a stopped response never reaches the client.
            self.outbox.drop_response(response.id)
        dropped = self.tools.drop_streaming(response.id)
        fields: dict[str, object] = {"response_id": response.id, "status": status.value}
        if reason is not None:
            fields["reason"] = reason
        if dropped:
            fields["dropped_tool_calls"] = dropped
        if status is ResponseStatus.INTERRUPTED and response.has_audio:
            if played_ms is not None:
                response.played_ms = max(0, min(played_ms, int(response.audio_sent_ms)))
            if response.played_ms is not None:
                fields["played_ms"] = response.played_ms
        if details:
            fields.update(details)
        record_ending(self, response, status, rendered_chars)
        response.advance(Trigger.END)
        for text in self.queued_user_turns:
            self.conversation.add("user", text)
        self.queued_user_turns.clear()
        trim_history(self)
        self.outbox.push(Event(RESPONSE_DONE, fields, response_id=response.id))
        if self.active is response:
            self.active = None
        self.last_response = response
        return True

    # -- errors ----------------------------------------------------------

    def queue_error(self, violation: ProtocolViolation) -> None:
        """Queue an in-band ``error`` event for a rejected client message."""
        fields = error_fields(
            violation.code.value, violation.message, violation.request_id, violation.details
        )
        self.outbox.push(Event(ERROR, fields))

    # -- sending ---------------------------------------------------------

    def next_event(self) -> Event | None:
        """Take the next event to send, number it and keep it for replay."""
        return number_next(self)

    def take_unpersisted(self) -> list[Event]:
        """Numbered events to write to the store, handed over once."""
        events, self.unpersisted = self.unpersisted, []
        return events

    def take_settled(self) -> list[ResponseState]:
        """Responses settled since the last call (for the usage ledger)."""
        settled, self.settled = self.settled, []
        return settled

    def unsettled(self) -> list[ResponseState]:
        """Ended or running responses whose ``response.done`` was never sent."""
        return list(self.responses.values())

    def number_pending(self) -> list[Event]:
        """Number every queued event now, without sending (no transport is attached)."""
        out: list[Event] = []
        while (event := self.next_event()) is not None:
            out.append(event)
        return out

    @property
    def last_seq(self) -> int:
        """Seq of the newest numbered event."""
        return self.replay.last_seq

    # -- resume and acks -------------------------------------------------

    def ack(self, seq: int) -> None:
        """The client has everything up to ``seq``: its tokens count as acknowledged."""
        for response_id, tokens in self.replay.ack(seq):
            self.usage.output_tokens_acknowledged += tokens
            response = self.responses.get(response_id)
            if response is None and self.last_response is not None:
                # Its done may be sent already; the ledger then has the count as of then.
                last = self.last_response
                response = last if last.id == response_id else None
            if response is not None:
                response.acknowledged_tokens += tokens

    def replay_after(self, last_seq: int) -> list[Event]:
        """Events the client missed, or :class:`ResumeRefused`."""
        return list(self.replay.after(last_seq))

    def history(self, response: ResponseState | None = None) -> list[Turn]:
        """The conversation as the next response (or ``response``) would see it."""
        return self.conversation.prompt(None if response is None else response.instructions)

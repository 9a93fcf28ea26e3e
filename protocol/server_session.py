"""The server side of a session, as a state machine with no I/O.

The runtime feeds it client commands and engine output and pulls events to
send. All transitions of a response's lifecycle live here::

    (none) --begin_response--> streaming --end_response--> done

Each response gets exactly one ``response.done``. Events are numbered when
they leave the outbox (``next_event``), into the replay buffer.
"""

from __future__ import annotations

import bisect
import enum
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from protocol.audio_frame import response_stream_id
from protocol.codes import ErrorCode
from protocol.conversation import Conversation, Turn
from protocol.errors import ProtocolViolation
from protocol.events import (
    ERROR,
    EVENT_OVERHEAD_BYTES,
    OUTPUT_JSON_DELTA,
    RESPONSE_CREATED,
    RESPONSE_DONE,
    AudioDelta,
    Event,
    TextDelta,
    error_fields,
)
from protocol.outbox import Outbox
from protocol.partial_json import PartialJson, PartialJsonError
from protocol.replay import ReplayBuffer
from protocol.text_buffer import TextBuffer
from protocol.tool_loop import CallState, ToolCallState, ToolLoop, result_text
from protocol.usage import Usage


class ResponseStatus(enum.StrEnum):
    """How a response ended (the ``status`` of ``response.done``)."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    FAILED = "failed"
    INCOMPLETE = "incomplete"


_CONTINUABLE = frozenset({"failed", "incomplete", "interrupted"})
_RECENT_REQUESTS = 16


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Bounds of one session; sent to the client in ``session.ready``."""

    replay_max_events: int = 4096
    replay_max_bytes: int = 1 << 20
    outbox_max_bytes: int = 1 << 20
    max_output_tokens: int = 4096
    max_input_chars: int = 100_000
    history_max_chars: int = 1_000_000
    """The conversation's text bound: past it the oldest turns are forgotten."""
    tool_timeout_ms: int = 0
    """How long an emitted tool call waits for its result (0: the worker's default)."""

    def to_dict(self) -> dict[str, int]:
        """Wire form."""
        return {
            "tool_timeout_ms": self.tool_timeout_ms,
            "replay_max_events": self.replay_max_events,
            "replay_max_bytes": self.replay_max_bytes,
            "outbox_max_bytes": self.outbox_max_bytes,
            "max_output_tokens": self.max_output_tokens,
            "max_input_chars": self.max_input_chars,
            "history_max_chars": self.history_max_chars,
        }


@dataclass(slots=True)
class ResponseState:
    """One response of a session, from creation to ``response.done``."""

    id: str
    max_output_tokens: int
    status: ResponseStatus | None = None
    reason: str | None = None
    input_tokens: int = 0
    generated_tokens: int = 0
    generated: TextBuffer = field(default_factory=TextBuffer)
    """Every character of text the engine produced for this response (one copy)."""
    delivered_tokens: int = 0
    delivered_chars: int = 0
    """How much of that text left the outbox (sent text is always a prefix of it)."""
    acknowledged_tokens: int = 0
    """Delivered tokens the client acked."""
    usage_recorded: bool = False
    """Set by the runtime once the usage went to the ledger (recorded once)."""
    prefix: str = ""
    """Text of the response this one continues (``response.continue``), if any."""
    continues: str | None = None
    history_text: str | None = None
    """The assistant turn this response left in the conversation."""
    history_index: int | None = None
    """Where that turn is in the conversation (a late playback report may shorten it)."""
    audio_ends_ms: list[float] = field(default_factory=list)
    """Audio timeline: where each chunk of generated audio ends, in ms..."""
    audio_ends_chars: list[int] = field(default_factory=list)
    """...and how many characters of generated text were out when it ended."""
    audio_sent_ms: float = 0.0
    """Audio that left the outbox for the client."""
    played_ms: int | None = None
    """The client's latest playback report, clamped to the audio sent."""
    rendered_chars: int | None = None
    """Characters the client said it showed when it interrupted (a cap on the history)."""
    generations: int = 0
    """Engine requests this response made (a tool loop makes one per round)."""
    segment_start: int = 0
    """Characters of text before the current round (earlier rounds are in the history)."""
    waiting_for_tools: bool = False
    """The engine stopped for tool calls; the response goes on when every result is in."""
    calls_in_history: bool = False
    """This round's emitted calls are recorded in an assistant turn already."""
    output_json: PartialJson | None = None
    """Parses the text of a response that asked for structured output."""
    output_schema: dict[str, Any] | None = None
    """The JSON Schema that output must match."""
    tool_retries: int = 0
    """Times the engine was asked to write an invalid call again."""
    output_json_shown: Any = None
    """The provisional value last sent (``response.output_json.delta``)."""

    @property
    def has_audio(self) -> bool:
        """Whether the response produced audio."""
        return bool(self.audio_ends_ms)

    def heard_chars(self, played_ms: float) -> int:
        """Characters whose audio was played in full within ``played_ms``."""
        index = bisect.bisect_right(self.audio_ends_ms, played_ms)
        return self.audio_ends_chars[index - 1] if index else 0

    @property
    def done(self) -> bool:
        """Whether the response has ended (its ``response.done`` is queued or sent)."""
        return self.status is not None

    def usage(self) -> Usage:
        """Usage of this response so far."""
        return Usage(
            self.input_tokens,
            self.generated_tokens,
            self.delivered_tokens,
            self.acknowledged_tokens,
        )

    @property
    def generated_chars(self) -> int:
        """Characters of text the engine produced for this response."""
        return self.generated.chars

    def delivered_text(self) -> str:
        """The text that has left the outbox for the client."""
        return self.generated.text()[: self.delivered_chars]

    def generated_text(self) -> str:
        """All text the engine produced for this response."""
        return self.generated.text()

    def restore_text(self, text: str) -> None:
        """Set the text of a response read back from a store (all of it delivered)."""
        self.generated = TextBuffer(text)
        self.delivered_chars = len(text)


def _turn_chars(turn: Turn) -> int:
    return len(turn.text) + sum(len(c.arguments) + len(c.name) for c in turn.tool_calls)


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
            self._trim_history()

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
        last = self.last_response
        if last is None or last.id != response_id:
            raise ProtocolViolation(
                ErrorCode.CANNOT_CONTINUE, f"{response_id} is not the latest response"
            )
        if last.status not in _CONTINUABLE:
            status = last.status.value if last.status else "running"
            raise ProtocolViolation(
                ErrorCode.CANNOT_CONTINUE, f"{response_id} ended {status}; nothing to continue"
            )
        turns = self.conversation.turns
        if last.history_text:
            if not turns or turns[-1].role != "assistant" or turns[-1].text != last.history_text:
                raise ProtocolViolation(
                    ErrorCode.CANNOT_CONTINUE, "the conversation moved on after that response"
                )
            # The partial turn becomes the prefix the engine continues from.
            self.conversation.pop()
        elif not self.conversation.awaiting_answer:
            raise ProtocolViolation(
                ErrorCode.CANNOT_CONTINUE, "the conversation moved on after that response"
            )
        response = self._new_response(max_output_tokens, request_id, continues=response_id)
        response.prefix = last.history_text or ""
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
        if response.done:
            # Output that raced with an abort: counted, never sent.
            return
        if text:
            response.generated.append(text)
            self.outbox.push_text(response.id, text, tokens)
            if response.output_json is not None:
                self._parse_output(response, text)
        if audio:
            ends = response.audio_ends_ms
            ends.append((ends[-1] if ends else 0.0) + audio_ms)
            response.audio_ends_chars.append(response.generated_chars)
            self.outbox.push_audio(response.id, response_stream_id(response.id), audio, audio_ms)

    def _parse_output(self, response: ResponseState, text: str) -> None:
        parser = response.output_json
        assert parser is not None
        try:
            parser.feed(text)
        except PartialJsonError:
            response.output_json = None  # reported as invalid_output when it ends
            response.reason = "invalid_output"
            return
        value = parser.value
        if value is not None and value != response.output_json_shown:
            # Only when it changed: a fragment inside a number or between tokens adds nothing.
            response.output_json_shown = value
            fields = {"response_id": response.id, "value": value, "provisional": True}
            # The value is about as large as the text so far: counted, so a client that
            # lags behind structured output meets the outbox bound like any other.
            size = EVENT_OVERHEAD_BYTES + response.generated_chars
            event = Event(OUTPUT_JSON_DELTA, fields, response_id=response.id, size=size)
            self.outbox.push(event)

    # -- tool calls ----------------------------------------------------------

    def record_tool_fragment(
        self, response: ResponseState, call_id: str, name: str, text: str, tokens: int
    ) -> None:
        """A piece of a call's arguments: a provisional delta (nothing once it ended)."""
        response.generated_tokens += tokens
        self.usage.output_tokens_generated += tokens
        if not response.done:
            event = self.tools.fragment(response.id, response.generations, call_id, name, text)
            event.tokens = tokens
            self.outbox.push(event)

    def emit_tool_call(self, response: ResponseState, call_id: str) -> ToolCallState:
        """The call's arguments are complete: validate and announce it.

        Raises :class:`protocol.tool_loop.ToolArgumentsInvalid`.
        """
        event = self.tools.complete(call_id)
        self.outbox.push(event)
        return self.tools.calls[call_id]

    def await_tools(self, response: ResponseState) -> list[ToolCallState]:
        """The engine stopped for its calls: the round's text and calls join the history."""
        calls = self.tools.emitted(response.id, response.generations)
        self._record_round(response, response.generated_text()[response.segment_start :])
        # That text is in the history now; an end while waiting must not add it again.
        response.segment_start = response.generated_chars
        response.waiting_for_tools = True
        return [c for c in calls if c.state.value == "emitted"]

    def _record_round(self, response: ResponseState, text: str) -> None:
        emitted = self.tools.emitted(response.id, response.generations)
        if response.calls_in_history or not emitted:
            if text:
                self.conversation.add("assistant", text)
            return
        self.conversation.append(Turn("assistant", text, tuple(c.as_call() for c in emitted)))
        response.calls_in_history = True
        # Results that came while the engine was still writing later calls.
        for call in emitted:
            if call.state is CallState.ANSWERED:
                text = result_text(call.output, call.error)
                self.conversation.append(Turn("tool", text, (), call.call_id))

    def reject_tool_call(self, response: ResponseState, call_id: str, message: str) -> None:
        """An invalid call and why, in the history, for the engine's next attempt."""
        call = self.tools.calls[call_id]
        text = response.generated_text()[response.segment_start :]
        self.conversation.append(Turn("assistant", text, (call.as_call(),)))
        error = result_text(None, f"invalid_arguments: {message}")
        self.conversation.append(Turn("tool", error, (), call_id))
        response.segment_start = response.generated_chars

    def add_tool_result(self, call_id: str, output: Any, error: str | None) -> bool:
        """A result the store applied; returns whether its waiting response may go on."""
        call = self.tools.answer(call_id, output, error)
        if call is None:
            return False
        if any(call_id in (c.call_id for c in t.tool_calls) for t in self.conversation.turns):
            self.conversation.append(Turn("tool", result_text(output, error), (), call_id))
        response = self.active
        return (
            response is not None
            and response.id == call.response_id
            and response.waiting_for_tools
            and not self.tools.pending(response.id)
        )

    def next_round(self, response: ResponseState) -> None:
        """Every result is in: the response generates again, after them."""
        response.waiting_for_tools = False
        response.calls_in_history = False
        response.segment_start = response.generated_chars

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
        played = max(0, min(played_ms, int(response.audio_sent_ms)))
        response.played_ms = played
        index = response.history_index
        if (
            response.status is ResponseStatus.INTERRUPTED
            and response.has_audio
            and index is not None
            and self.active is None  # a running answer was built on the turn as it is
        ):
            turns = self.conversation.turns
            if index < len(turns) and turns[index].text == response.history_text:
                heard = response.delivered_text()[: response.heard_chars(played)]
                if response.rendered_chars is not None:
                    heard = heard[: response.rendered_chars]
                text = response.prefix + heard
                self.conversation.replace(index, Turn("assistant", text))
                response.history_text = text
        return response

    def push_event(self, type: str, fields: dict[str, object]) -> None:
        """Queue a session event that belongs to no response (input audio events)."""
        self.outbox.push(Event(type, fields))

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
    ) -> bool:
        """End a response with ``status``; queues its single ``response.done``.

        ``generated_tokens`` is the engine's own count when it knows better than
        the sum of the chunks seen here. Returns ``False`` if it had already
        ended (a second end is ignored: one ``done`` per response).
        """
        if response.done:
            return False
        response.status = status
        response.reason = reason
        if input_tokens is not None:
            self.usage.input_tokens += input_tokens - response.input_tokens
            response.input_tokens = input_tokens
        if generated_tokens is not None and generated_tokens > response.generated_tokens:
            self.usage.output_tokens_generated += generated_tokens - response.generated_tokens
            response.generated_tokens = generated_tokens
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
        self._record_history(response, status, rendered_chars)
        for text in self.queued_user_turns:
            self.conversation.add("user", text)
        self.queued_user_turns.clear()
        self._trim_history()
        self.outbox.push(Event(RESPONSE_DONE, fields, response_id=response.id))
        if self.active is response:
            self.active = None
        self.last_response = response
        return True

    def annotate_done(self, response: ResponseState, **fields: object) -> None:
        """Add fields to a response's queued ``response.done``."""
        for event in self.outbox.pending():
            if event.type == RESPONSE_DONE and event.response_id == response.id:
                event.fields.update(fields)

    def _record_history(
        self, response: ResponseState, status: ResponseStatus, rendered_chars: int | None
    ) -> None:
        if status is ResponseStatus.CANCELLED:
            return
        if status is ResponseStatus.INTERRUPTED:
            text = response.delivered_text()[response.segment_start :]
            if response.played_ms is not None:
                # What the user heard, not what reached the device's buffer.
                text = text[: response.heard_chars(response.played_ms)]
            if rendered_chars is not None:
                response.rendered_chars = rendered_chars
                # A client cannot have rendered more than it was sent: clamp.
                text = text[: max(0, rendered_chars)]
        else:
            text = response.generated_text()[response.segment_start :]
        if response.segment_start == 0:
            text = response.prefix + text
        if not response.calls_in_history and self.tools.emitted(response.id, response.generations):
            # Calls the client got stay in the history, so their results can follow.
            self._record_round(response, text)
            return
        if text:
            response.history_index = len(self.conversation.turns)
            self.conversation.add("assistant", text)
            response.history_text = text

    def history_chars(self) -> int:
        """Characters of the conversation (turn texts and tool-call arguments)."""
        return sum(_turn_chars(t) for t in self.conversation.turns)

    def _trim_history(self) -> None:
        """Forget the oldest turns while the history is above its bound.

        Whole exchanges go: the history then starts at a user turn (never with
        an answer or a tool result whose call was forgotten). The newest turn
        always stays: it is what the next response answers.
        """
        turns = self.conversation.turns
        excess = self.history_chars() - self.limits.history_max_chars
        if excess <= 0:
            return
        drop = 0
        while drop < len(turns) - 1 and (excess > 0 or turns[drop].role != "user"):
            excess -= _turn_chars(turns[drop])
            drop += 1
        if not drop:
            return
        del turns[:drop]
        self.conversation.version += 1
        for response in (self.last_response, self.active):
            if response is not None and response.history_index is not None:
                index = response.history_index - drop
                response.history_index = index if index >= 0 else None

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
        event = self.outbox.pop()
        if event is None:
            return None
        response = self.responses.get(event.response_id) if event.response_id else None
        if isinstance(event, TextDelta):
            text = event.seal()
            if response is not None:
                response.delivered_chars += len(text)
                response.delivered_tokens += event.tokens
            self.usage.output_tokens_delivered += event.tokens
        elif event.tokens and response is not None:
            # A tool call's argument fragment: its tokens reached the client too.
            response.delivered_tokens += event.tokens
            self.usage.output_tokens_delivered += event.tokens
        elif type(event) is AudioDelta:
            event.seal()
            if response is not None:
                response.audio_sent_ms += event.duration_ms
        elif event.type == RESPONSE_DONE and response is not None:
            event.fields["usage"] = response.usage().to_dict()
            if response.has_audio:
                event.fields["audio_ms"] = round(response.audio_sent_ms)
            del self.responses[response.id]
            self.settled.append(response)
        event.seq = self.replay.last_seq + 1
        self.replay.append(event)
        if self.keep_unpersisted:
            self.unpersisted.append(event)
        return event

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

    def flush(self) -> list[Event]:
        """Number every queued event now (used while no connection is attached)."""
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

    def history(self) -> list[Turn]:
        """The conversation as the next response would see it."""
        return self.conversation.prompt()

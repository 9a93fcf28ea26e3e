"""Tool calls of a session: assembly from streamed fragments, validation, results.

The engine streams a call's arguments as text fragments. Each fragment is
shown to the client as a provisional ``response.tool_call.delta`` (with the
partial arguments parsed so far); the ``response.tool_call`` event leaves only
when the engine says the arguments are complete and they are valid JSON that
matches the tool's schema. One call's life::

    streaming --complete, valid--> emitted --result--> answered
        |                             '--timeout--> timed_out
        '--interrupt, cancel, invalid--> dropped (never reaches the client as a call)

Results are idempotent by call id; the durable record of that lives in the
session store (the runtime asks it first), this module keeps the local view.
"""

from __future__ import annotations

import enum
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from protocol.codes import ErrorCode
from protocol.conversation import ToolCall
from protocol.errors import ProtocolViolation
from protocol.events import TOOL_CALL, TOOL_CALL_DELTA, Event
from protocol.json_schema import LIMITS, CompiledSchema, compile_schema
from protocol.partial_json import PartialJson, PartialJsonError

_KEPT_CALLS = 1024
"""Finished calls remembered per session (a result re-sent for an older one is
still recognised by the store's ledger)."""


class CallState(enum.StrEnum):
    """Where a tool call is in its life."""

    STREAMING = "streaming"
    EMITTED = "emitted"
    ANSWERED = "answered"
    TIMED_OUT = "timed_out"
    DROPPED = "dropped"


class ToolArgumentsInvalid(Exception):
    """A call's arguments are not JSON, or do not match the tool's schema."""

    def __init__(self, call_id: str, name: str, message: str) -> None:
        super().__init__(message)
        self.call_id = call_id
        self.name = name
        self.message = message


@dataclass(slots=True)
class ToolCallState:
    """One call, as this worker knows it."""

    call_id: str
    name: str
    response_id: str
    round: int = 0
    """Which engine request of the response made the call."""
    parser: PartialJson = field(default_factory=lambda: PartialJson(unicode_only=True))
    """Parses the arguments as they stream; a lone surrogate makes them invalid (it
    could not be sent to the client as UTF-8)."""
    text: list[str] = field(default_factory=list)
    state: CallState = CallState.STREAMING
    arguments: Any = None
    output: Any = None
    error: str | None = None

    @property
    def arguments_text(self) -> str:
        """The arguments as the engine wrote them."""
        return "".join(self.text)

    def as_call(self) -> ToolCall:
        """The call as the conversation records it."""
        return ToolCall(self.call_id, self.name, self.arguments_text)

    def announcement(self) -> dict[str, Any]:
        """What ``response.tool_call`` (and a resume's pending list) says of the call."""
        return {
            "response_id": self.response_id,
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
        }


class ToolLoop:
    """The session's tools and calls."""

    __slots__ = ("_validators", "calls", "tools")

    def __init__(self) -> None:
        self.tools: dict[str, dict[str, Any]] = {}
        """Tool name → its declaration (name, description, parameters)."""
        self._validators: dict[str, CompiledSchema] = {}
        self.calls: OrderedDict[str, ToolCallState] = OrderedDict()

    def set_tools(self, tools: list[dict[str, Any]]) -> None:
        """Replace the tools (validated first: a bad schema changes nothing)."""
        self._validators = compile_tools(tools)
        self.tools = {t["name"]: t for t in tools}

    # -- from the engine ---------------------------------------------------

    def fragment(self, response_id: str, round: int, call_id: str, name: str, text: str) -> Event:
        """A piece of a call's arguments; returns its provisional delta event."""
        call = self.calls.get(call_id)
        if call is None:
            call = self.calls[call_id] = ToolCallState(call_id, name, response_id, round)
            self._forget_old()
        call.text.append(text)
        partial: Any = None
        if call.state is CallState.STREAMING:
            try:
                call.parser.feed(text)
                partial = call.parser.value
            except PartialJsonError:
                partial = None  # reported when the call completes
        fields = {
            "response_id": response_id,
            "call_id": call_id,
            "name": name,
            "delta": text,
            "arguments": partial,
            "provisional": True,
        }
        return Event(TOOL_CALL_DELTA, fields, response_id=response_id, size=64 + len(text))

    def complete(self, call_id: str, validators: dict[str, CompiledSchema] | None = None) -> Event:
        """The engine finished a call's arguments: validate, then the call event.

        ``validators`` are the calling response's own tools (a ``response.create``
        that named them), else the session's.
        """
        call = self.calls[call_id]
        try:
            # The parser that followed the stream: the value json.loads would give, found
            # without recursion (json.loads raises RecursionError past ~1000 levels).
            arguments = call.parser.finish()
        except PartialJsonError:
            call.state = CallState.DROPPED
            raise ToolArgumentsInvalid(
                call_id, call.name, f"arguments of {call.name} are not valid json"
            ) from None
        validator = (self._validators if validators is None else validators).get(call.name)
        if validator is None:
            call.state = CallState.DROPPED
            raise ToolArgumentsInvalid(call_id, call.name, f"no tool named {call.name!r}")
        problem = validator.problem(arguments)
        if problem is not None:
            call.state = CallState.DROPPED
            raise ToolArgumentsInvalid(
                call_id, call.name, f"arguments of {call.name} do not match its schema: {problem}"
            )
        call.arguments = arguments
        call.state = CallState.EMITTED
        return Event(TOOL_CALL, call.announcement(), response_id=call.response_id)

    def drop_streaming(self, response_id: str) -> list[str]:
        """Drop the calls of a response whose arguments were still streaming."""
        dropped = []
        for call in self.calls.values():
            if call.response_id == response_id and call.state is CallState.STREAMING:
                call.state = CallState.DROPPED
                dropped.append(call.call_id)
        return dropped

    # -- results -----------------------------------------------------------

    def pending(self, response_id: str | None = None) -> list[ToolCallState]:
        """Emitted calls without a result (of one response, or all)."""
        return [
            c
            for c in self.calls.values()
            if c.state is CallState.EMITTED and response_id in (None, c.response_id)
        ]

    def emitted(self, response_id: str, round: int) -> list[ToolCallState]:
        """Every call of one round of a response that reached the client."""
        return [
            c
            for c in self.calls.values()
            if c.response_id == response_id
            and c.round == round
            and c.state in (CallState.EMITTED, CallState.ANSWERED, CallState.TIMED_OUT)
        ]

    def answer(self, call_id: str, output: Any, error: str | None) -> ToolCallState | None:
        """Record a result locally (the store decided it applies); the call, if known."""
        call = self.calls.get(call_id)
        if call is not None:
            call.state = CallState.ANSWERED
            call.output = output
            call.error = error
        return call

    def adopt(self, call: ToolCallState) -> None:
        """Know a call from the store's ledger (after a takeover)."""
        self.calls.setdefault(call.call_id, call)

    def _forget_old(self) -> None:
        while len(self.calls) > _KEPT_CALLS:
            oldest = next(iter(self.calls))
            if self.calls[oldest].state in (CallState.STREAMING, CallState.EMITTED):
                break  # never forget a live call
            del self.calls[oldest]


def compile_tools(tools: list[dict[str, Any]]) -> dict[str, CompiledSchema]:
    """Each tool's compiled parameters; raises for duplicate names or a bad schema."""
    names = [t["name"] for t in tools]
    if len(set(names)) != len(names):
        raise ProtocolViolation(ErrorCode.INVALID_FIELD, "tool names must be unique")
    validators: dict[str, CompiledSchema] = {}
    nodes = 0
    for tool in tools:
        compiled = compile_schema(tool.get("parameters", {}), f"parameters of {tool['name']}")
        nodes += compiled.nodes
        if nodes > LIMITS.tools_nodes:
            # Each schema is bounded; so is the work of compiling them all.
            raise ProtocolViolation(
                ErrorCode.INVALID_SCHEMA,
                f"the tools' parameters have more than {LIMITS.tools_nodes} values"
                " together (the limit)",
            )
        validators[tool["name"]] = compiled
    return validators


def result_text(output: Any, error: str | None) -> str:
    """A result as the conversation's ``tool`` turn records it."""
    if error is not None:
        return json.dumps({"error": error})
    return json.dumps(output)

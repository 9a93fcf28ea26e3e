"""Tool rounds in the core: validation, retry or fail, results, next round, timeout."""

from __future__ import annotations

import json

from protocol.generation import FinishReason
from protocol.session.effects import (
    AbortGeneration,
    ApplyToolResult,
    ArmTimer,
    CancelTimer,
    CloseToolCalls,
    RecordToolCall,
    StartGeneration,
)
from protocol.session.inputs import (
    EngineCounts,
    EngineFinished,
    GenerationStarted,
    ResultOutcome,
    TimerFired,
    TimerKind,
    ToolCallsClosed,
    ToolResultStored,
)
from protocol.session.lifecycle import Phase
from protocol.tool_loop import CallState
from tests.protocol.session.drive import WEATHER, Driver, of_type

PARIS = json.dumps({"city": "Paris"})


def _call(drive: Driver, response: str, call_id: str, arguments: str) -> list[object]:
    drive.fragment(response, call_id, arguments)
    return list(drive.fragment(response, call_id, complete=True))


def test_a_valid_call_is_announced_recorded_and_awaited() -> None:
    drive = Driver(tools=[WEATHER], tool_timeout=7.0)
    response = drive.start()
    effects = _call(drive, response, "c1", PARIS)
    assert RecordToolCall("c1", response, "get_weather", PARIS) in effects
    (call,) = of_type(drive.read(), "response.tool_call")
    assert call["arguments"] == {"city": "Paris"}
    effects = list(drive.finish(response, FinishReason.TOOL_CALLS))
    assert ArmTimer(TimerKind.TOOL_WAIT, 7.0) in effects
    assert drive.session.active is not None
    assert drive.session.active.phase is Phase.AWAITING_TOOLS


def test_arguments_that_break_the_schema_fail_the_response_without_retries() -> None:
    """Schema validation in the tool loop: an invalid call never reaches the client."""
    drive = Driver(tools=[WEATHER])
    response = drive.start()
    effects = _call(drive, response, "c1", json.dumps({"town": "Paris"}))
    assert AbortGeneration() in effects
    assert not [e for e in effects if isinstance(e, RecordToolCall)]
    events = drive.read()
    assert of_type(events, "response.tool_call") == []
    (done,) = of_type(events, "response.done")
    assert (done["status"], done["reason"]) == ("failed", "invalid_tool_arguments")
    assert done["error"]["call_id"] == "c1"
    assert "do not match its schema" in done["error"]["message"]


def test_arguments_that_break_the_schema_are_written_again_with_retries() -> None:
    drive = Driver(tools=[WEATHER], tool_retries=1)
    response = drive.start()
    effects = _call(drive, response, "c1", json.dumps({"city": 3}))
    abort = effects.index(AbortGeneration())
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    assert effects.index(start) > abort, "the old request is aborted before the new one"
    assert start.request.request_id.endswith("/2")
    assert start.request.prompt[-1].role == "tool"
    assert "invalid_arguments" in start.request.prompt[-1].text
    events = drive.read()
    (rejected,) = of_type(events, "response.tool_call.rejected")
    assert (rejected["call_id"], rejected["retry"]) == ("c1", 1)
    assert of_type(events, "response.tool_call") == []
    assert of_type(events, "response.done") == []
    # A second invalid call is past the retries: the response fails.
    _call(drive, response, "c2", "not json")
    (done,) = of_type(drive.read(), "response.done")
    assert (done["status"], done["reason"]) == ("failed", "invalid_tool_arguments")


def test_every_result_in_starts_the_next_round() -> None:
    drive = Driver(tools=[WEATHER])
    response = drive.start()
    _call(drive, response, "c1", PARIS)
    _call(drive, response, "c2", json.dumps({"city": "Oslo"}))
    drive.finish(response, FinishReason.TOOL_CALLS)
    effects = drive.send(type="tool.result", call_id="c1", output={"t": 1}, id="m1")
    assert ApplyToolResult("c1", {"t": 1}, None, "m1") in effects
    assert not [e for e in effects if isinstance(e, StartGeneration)], "the store decides first"
    effects = drive.feed(ToolResultStored("c1", ResultOutcome.APPLIED, {"t": 1}, None, "m1"))
    assert not [e for e in effects if isinstance(e, StartGeneration)], "c2 is still out"
    effects = drive.feed(ToolResultStored("c2", ResultOutcome.APPLIED, {"t": 2}, None, None))
    assert CancelTimer(TimerKind.TOOL_WAIT) in effects
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    assert [t.role for t in start.request.prompt] == ["user", "assistant", "tool", "tool"]
    accepted = of_type(drive.read(), "tool.result.accepted")
    assert [(a["call_id"], a["duplicate"]) for a in accepted] == [("c1", False), ("c2", False)]
    assert drive.session.active is not None
    assert drive.session.active.phase is Phase.GENERATING


def test_a_refused_result_is_an_error_with_its_request_id() -> None:
    drive = Driver(tools=[WEATHER])
    drive.feed(ToolResultStored("nope", ResultOutcome.UNKNOWN, None, None, "m9"))
    drive.feed(ToolResultStored("c1", ResultOutcome.CLOSED, None, None, "m8", "timed_out"))
    drive.feed(ToolResultStored("c1", ResultOutcome.UNAVAILABLE, None, None, "m7"))
    errors = of_type(drive.read(), "error")
    assert [(e["code"], e["request_id"]) for e in errors] == [
        ("unknown_tool_call", "m9"),
        ("tool_call_closed", "m8"),
        ("store_unavailable", "m7"),
    ]
    assert "is timed_out" in errors[1]["message"]


def test_a_timeout_closes_the_unanswered_calls_and_ends_incomplete() -> None:
    drive = Driver(tools=[WEATHER])
    response = drive.start()
    _call(drive, response, "c1", PARIS)
    drive.finish(response, FinishReason.TOOL_CALLS)
    effects = drive.feed(TimerFired(TimerKind.TOOL_WAIT))
    assert effects == [CloseToolCalls(response, ("c1",))]
    drive.feed(ToolCallsClosed(response, ("c1",)))
    events = drive.read()
    (closed,) = of_type(events, "response.tool_call.closed")
    assert (closed["call_id"], closed["status"]) == ("c1", "timed_out")
    (done,) = of_type(events, "response.done")
    assert (done["status"], done["reason"]) == ("incomplete", "tool_timeout")


def test_a_result_that_won_the_race_with_the_timeout_keeps_the_response() -> None:
    drive = Driver(tools=[WEATHER])
    response = drive.start()
    _call(drive, response, "c1", PARIS)
    drive.finish(response, FinishReason.TOOL_CALLS)
    drive.feed(TimerFired(TimerKind.TOOL_WAIT))
    drive.feed(ToolCallsClosed(response, ()))  # the ledger had the result already
    assert of_type(drive.read(), "response.done") == []
    effects = drive.feed(ToolResultStored("c1", ResultOutcome.APPLIED, 1, None, None))
    assert [e for e in effects if isinstance(e, StartGeneration)]


def test_an_interrupt_drops_the_calls_still_streaming() -> None:
    """The end of a response drops calls whose arguments had not completed."""
    drive = Driver(tools=[WEATHER])
    response = drive.start()
    drive.fragment(response, "c1", '{"city": "Par')
    drive.send(EngineCounts(3, 2), type="response.interrupt")
    (done,) = of_type(drive.read(), "response.done")
    assert done["dropped_tool_calls"] == ["c1"]
    assert drive.session.tools.calls["c1"].state is CallState.DROPPED
    # Its end arriving late announces nothing.
    drive.fragment(response, "c1", complete=True)
    assert of_type(drive.read(), "response.tool_call") == []


def test_an_interrupt_while_awaiting_keeps_the_emitted_call() -> None:
    drive = Driver(tools=[WEATHER])
    response = drive.start()
    _call(drive, response, "c1", PARIS)
    drive.finish(response, FinishReason.TOOL_CALLS)
    effects = drive.send(type="response.interrupt")
    assert CancelTimer(TimerKind.TOOL_WAIT) in effects
    assert AbortGeneration() not in effects, "no engine request runs while awaiting"
    (done,) = of_type(drive.read(), "response.done")
    assert "dropped_tool_calls" not in done
    assert [c.call_id for c in drive.session.tools.pending()] == ["c1"]


def test_usage_counts_each_round_by_its_own_engine_count() -> None:
    """An upstream's usage may count more tokens than its chunks showed, in every round."""
    drive = Driver(tools=[WEATHER])
    effects = drive.send(type="response.create", input="hello")
    (first,) = [e for e in effects if isinstance(e, StartGeneration)]
    response = first.response_id
    drive.feed(GenerationStarted(response, 3))
    # Round 1: the call's chunks carry 2 tokens; the engine counted 7 for the request.
    drive.fragment(response, "c1", PARIS)
    drive.fragment(response, "c1", complete=True)
    drive.feed(EngineFinished(response, FinishReason.TOOL_CALLS), EngineCounts(3, 7))
    drive.send(type="tool.result", call_id="c1", output={"t": 1})
    effects = drive.feed(ToolResultStored("c1", ResultOutcome.APPLIED, {"t": 1}, None, None))
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    drive.feed(GenerationStarted(response, 9))
    # Round 2: 3 chunks of text; the engine counted 4 (its end token).
    for word in ("it ", "is ", "warm"):
        drive.output(response, word)
    drive.feed(EngineFinished(response, FinishReason.STOP), EngineCounts(9, 4))
    (done,) = of_type(drive.read(), "response.done")
    assert done["usage"]["output_tokens_generated"] == 7 + 4
    assert drive.session.usage.output_tokens_generated == 7 + 4
    # The next round's budget is what the first left by the engine's count.
    assert start.request.max_output_tokens == first.request.max_output_tokens - 7

"""Client-driven tool rounds, per-response overrides, and the prompt's tool-result shape."""

from __future__ import annotations

import json
from typing import Any

from protocol.conversation import NO_RESULT_TEXT, Conversation, ToolCall, Turn
from protocol.generation import FinishReason
from protocol.session.effects import ApplyToolResult, ArmTimer, StartGeneration
from protocol.session.inputs import ResultOutcome, ToolResultStored
from protocol.session.responses import ResponseStatus
from protocol.snapshot import (
    ConversationSnapshot,
    StreamSnapshot,
    conversation_snapshot,
    restore_session,
    stream_snapshot,
)
from tests.protocol.session.drive import WEATHER, Driver, of_type

PARIS = json.dumps({"city": "Paris"})
CLOCK: dict[str, Any] = {"name": "get_time", "parameters": {"type": "object"}}


def _client_round(drive: Driver) -> tuple[str, list[Any]]:
    response = drive.start("weather in Paris?")
    drive.fragment(response, "c1", PARIS)
    drive.fragment(response, "c1", complete=True)
    return response, list(drive.finish(response, FinishReason.TOOL_CALLS))


def _result(drive: Driver, call_id: str, output: Any) -> list[Any]:
    effects = drive.send(type="tool.result", call_id=call_id, output=output)
    assert ApplyToolResult(call_id, output, None, None) in effects
    return drive.feed(ToolResultStored(call_id, ResultOutcome.APPLIED, output, None, None))


def test_client_mode_ends_the_response_at_the_calls_without_a_timer() -> None:
    drive = Driver(tools=[WEATHER])
    drive.send(type="session.update", tool_rounds="client")
    _, effects = _client_round(drive)
    assert not [e for e in effects if isinstance(e, ArmTimer)], "no tool-wait timer"
    assert not [e for e in effects if isinstance(e, StartGeneration)]
    assert drive.session.active is None
    (done,) = of_type(drive.read(), "response.done")
    assert (done["status"], done["reason"]) == ("completed", "tool_calls")
    assert done["tool_calls"] == [{"call_id": "c1", "name": "get_weather"}]
    assert [c.call_id for c in drive.session.tools.pending()] == ["c1"], "the call stays open"


def test_server_mode_still_waits_for_the_results() -> None:
    drive = Driver(tools=[WEATHER], tool_timeout=5.0)
    response, effects = _client_round(drive)
    assert [e for e in effects if isinstance(e, ArmTimer)]
    assert drive.session.active is not None and drive.session.active.id == response


def test_a_late_result_is_recorded_and_the_next_response_answers_with_it() -> None:
    drive = Driver(tools=[WEATHER])
    drive.send(type="session.update", tool_rounds="client")
    _client_round(drive)
    drive.read()
    effects = _result(drive, "c1", {"temp": 21})
    assert not [e for e in effects if isinstance(e, StartGeneration)], "nothing starts by itself"
    assert of_type(drive.read(), "tool.result.accepted")
    effects = drive.send(type="response.create")
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    roles = [(t.role, t.tool_call_id) for t in start.request.prompt]
    assert roles[-2:] == [("assistant", None), ("tool", "c1")]
    assert json.loads(start.request.prompt[-1].text) == {"temp": 21}


def test_a_result_after_later_turns_is_placed_right_after_its_call_in_the_prompt() -> None:
    drive = Driver(tools=[WEATHER])
    drive.send(type="session.update", tool_rounds="client")
    _client_round(drive)
    drive.send(type="input.text", text="and meanwhile?")
    _result(drive, "c1", {"temp": 21})
    stored = [t.role for t in drive.session.conversation.turns]
    assert stored == ["user", "assistant", "user", "tool"], "the history keeps arrival order"
    (start,) = [e for e in drive.send(type="response.create") if isinstance(e, StartGeneration)]
    shaped = [t.role for t in start.request.prompt]
    assert shaped == ["user", "assistant", "tool", "user"]


def test_an_unanswered_call_gets_a_placeholder_in_the_prompt_only() -> None:
    drive = Driver(tools=[WEATHER])
    drive.send(type="session.update", tool_rounds="client")
    _client_round(drive)
    (start,) = [
        e
        for e in drive.send(type="response.create", input="forget it")
        if isinstance(e, StartGeneration)
    ]
    prompt = start.request.prompt
    assert [(t.role, t.tool_call_id) for t in prompt][-3:] == [
        ("assistant", None),
        ("tool", "c1"),
        ("user", None),
    ]
    assert prompt[-2].text == NO_RESULT_TEXT
    assert all(t.text != NO_RESULT_TEXT for t in drive.session.conversation.turns)


def test_prompt_shape_drops_a_stray_result_and_keeps_an_ordered_history_as_is() -> None:
    call = ToolCall("c1", "get_weather", PARIS)
    ordered = Conversation("sys", [Turn("user", "q"), Turn("assistant", "", (call,))])
    ordered.turns.append(Turn("tool", "1", (), "c1"))
    assert ordered.prompt()[1:] == ordered.turns
    stray = Conversation(None, [Turn("tool", "x", (), "gone"), Turn("user", "q")])
    assert [t.role for t in stray.prompt()] == ["user"]
    assert [t.text for t in ordered.prompt("other")][:1] == ["other"]
    assert [t.role for t in ordered.prompt("")][:1] == ["user"]


def test_response_overrides_apply_to_that_response_only() -> None:
    drive = Driver(tools=[WEATHER])
    drive.send(type="session.update", instructions="session rules")
    effects = drive.send(type="response.create", input="hi", instructions="only now", tools=[CLOCK])
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    assert start.request.prompt[0].text == "only now"
    assert [t["name"] for t in start.request.tools] == ["get_time"]
    response = start.response_id
    drive.finish(response, FinishReason.STOP)
    (start2,) = [
        e
        for e in drive.send(type="response.create", input="next")
        if isinstance(e, StartGeneration)
    ]
    assert start2.request.prompt[0].text == "session rules"
    assert [t["name"] for t in start2.request.tools] == ["get_weather"]


def test_response_tools_are_the_ones_its_calls_are_checked_against() -> None:
    drive = Driver(tools=[WEATHER])
    effects = drive.send(type="response.create", input="what time", tools=[CLOCK])
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    assert [t["name"] for t in start.request.tools] == ["get_time"]
    drive.fragment(start.response_id, "c1", PARIS)
    drive.fragment(start.response_id, "c1", complete=True)  # get_weather: not this response's
    (done,) = of_type(drive.read(), "response.done")
    assert (done["status"], done["reason"]) == ("failed", "invalid_tool_arguments")
    assert "no tool named" in done["error"]["message"]


def test_audio_output_true_on_a_text_session_is_refused() -> None:
    drive = Driver()
    drive.send(type="response.create", input="hi", audio_output=True, id="r1")
    (error,) = of_type(drive.read(), "error")
    assert (error["code"], error["request_id"]) == ("audio_not_enabled", "r1")
    assert drive.session.active is None
    assert drive.session.conversation.turns == [], "a refused request adds no turn"


def test_audio_output_false_silences_one_answer_of_a_voice_session() -> None:
    drive = Driver(audio={"sample_rate": 16000})
    effects = drive.send(type="response.create", input="hi", audio_output=False)
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    assert start.request.audio_output is False


def test_a_continued_response_keeps_its_overrides_across_a_store() -> None:
    drive = Driver()
    response = drive.start("hi", instructions="only now")
    drive.output(response, "partial")
    drive.read()
    active = drive.session.active
    assert active is not None
    drive.session.end_response(active, ResponseStatus.FAILED, reason="engine_error")
    drive.read()
    restored, _ = restore_session(
        "sess",
        ConversationSnapshot.from_dict(conversation_snapshot(drive.session).to_dict()),
        StreamSnapshot.from_dict(stream_snapshot(drive.session).to_dict()),
        [],
        client_last_seq=drive.session.last_seq,
        partial_text="",
    )
    continued = restored.continue_response(response)
    assert continued.instructions == "only now"
    assert restored.history(continued)[0].text == "only now"


def test_a_bad_tools_override_starts_nothing_and_adds_no_turn() -> None:
    drive = Driver(tools=[WEATHER])
    bad = {"name": "x", "parameters": {"type": "object", "properties": 3}}
    effects = drive.send(type="response.create", input="hi", tools=[bad, bad], id="r1")
    assert not [e for e in effects if isinstance(e, StartGeneration)]
    (error,) = of_type(drive.read(), "error")
    assert error["request_id"] == "r1"
    assert drive.session.conversation.turns == []


def test_before_any_result_a_bare_response_create_has_nothing_to_answer() -> None:
    drive = Driver(tools=[WEATHER])
    drive.send(type="session.update", tool_rounds="client")
    _client_round(drive)
    drive.read()
    drive.send(type="response.create", id="r2")
    (error,) = of_type(drive.read(), "error")
    assert (error["code"], error["request_id"]) == ("nothing_to_answer", "r2")

"""Messages sent after a ``tool.result`` wait for it to be stored; control does not.

The reader never waits for the store, so the core keeps the client's order itself: a
message that reads or changes the conversation is handled after the results ahead of
it are stored; an interrupt, cancel or ack is handled at once.
"""

from __future__ import annotations

from protocol.generation import FinishReason
from protocol.session.effects import AbortGeneration, ApplyToolResult, StartGeneration
from protocol.session.inputs import ResultOutcome, ToolResultStored
from protocol.session.result_order import MAX_WAITING
from tests.protocol.session.drive import WEATHER, Driver, of_type

PARIS = '{"city": "Paris"}'


def _interrupted_with_pending_call() -> Driver:
    """A response interrupted after its call was emitted: the call waits for its result."""
    drive = Driver(tools=[WEATHER])
    response = drive.start("weather in Paris")
    drive.fragment(response, "c1", PARIS)
    drive.fragment(response, "c1", complete=True)
    drive.finish(response, FinishReason.TOOL_CALLS)
    drive.send(type="response.interrupt")
    drive.read()
    return drive


def _stored(
    call_id: str = "c1", outcome: ResultOutcome = ResultOutcome.APPLIED
) -> ToolResultStored:
    return ToolResultStored(call_id, outcome, {"t": 8}, None, "t1")


def test_create_right_after_a_result_answers_from_the_result() -> None:
    drive = _interrupted_with_pending_call()
    effects = drive.send(type="tool.result", call_id="c1", output={"t": 8}, id="t1")
    assert ApplyToolResult("c1", {"t": 8}, None, "t1") in effects
    # The client sent response.create after the result, before the store answered.
    assert drive.send(type="response.create", id="again") == []
    effects = drive.feed(_stored())
    assert not of_type(drive.read(), "error")
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    assert [t.role for t in start.request.prompt][-1] == "tool"


def test_input_text_right_after_a_result_follows_it_in_the_history() -> None:
    drive = _interrupted_with_pending_call()
    drive.send(type="tool.result", call_id="c1", output={"t": 8}, id="t1")
    drive.send(type="input.text", text="and now?", id="i1")
    drive.feed(_stored())
    roles = [t.role for t in drive.session.conversation.turns]
    assert roles[-2:] == ["tool", "user"], roles


def test_an_interrupt_does_not_wait_for_a_result_being_stored() -> None:
    drive = Driver(tools=[WEATHER])
    first = drive.start("weather in Paris")
    drive.fragment(first, "c1", PARIS)
    drive.fragment(first, "c1", complete=True)
    drive.finish(first, FinishReason.TOOL_CALLS)
    drive.send(type="tool.result", call_id="c1", output={"t": 8}, id="t1")
    drive.send(type="input.text", text="and now?")  # waits behind the result
    effects = drive.send(type="response.interrupt")
    assert not any(isinstance(e, AbortGeneration) for e in effects), "no engine request runs"
    dones = of_type(drive.read(), "response.done")
    assert [d["status"] for d in dones] == ["interrupted"], "handled at once"


def test_a_result_behind_a_waiting_message_keeps_its_place() -> None:
    """Two calls of one round: result, text, result. The second result goes to the
    ledger only after the text it followed was handled."""
    drive = _interrupted_with_pending_call()
    drive.send(type="tool.result", call_id="c1", output={"t": 8}, id="t1")
    drive.send(type="input.text", text="and now?")
    effects = drive.send(type="tool.result", call_id="c2", output={"t": 9}, id="t2")
    assert not any(isinstance(e, ApplyToolResult) for e in effects), "it waits"
    effects = drive.feed(_stored())
    assert ApplyToolResult("c2", {"t": 9}, None, "t2") in effects
    roles = [t.role for t in drive.session.conversation.turns]
    assert roles[-2:] == ["tool", "user"], roles


def test_waiting_messages_go_on_when_the_store_cannot_apply_the_result() -> None:
    for outcome in (ResultOutcome.UNAVAILABLE, ResultOutcome.FAILED):
        drive = _interrupted_with_pending_call()
        drive.send(type="tool.result", call_id="c1", output={"t": 8}, id="t1")
        drive.send(type="input.text", text="and now?", id="i1")
        effects = drive.feed(_stored(outcome=outcome))
        events = drive.read()
        (error,) = of_type(events, "error")
        assert error["request_id"] == "t1"
        assert error["code"] == (
            "store_unavailable" if outcome is ResultOutcome.UNAVAILABLE else "internal_error"
        )
        assert drive.session.conversation.turns[-1].text == "and now?"
        assert not any(isinstance(e, StartGeneration) for e in effects)


def test_messages_past_the_bound_are_refused_in_band() -> None:
    drive = _interrupted_with_pending_call()
    drive.send(type="tool.result", call_id="c1", output={"t": 8}, id="t1")
    for index in range(MAX_WAITING):
        assert drive.send(type="input.text", text=f"t{index}") == []
    drive.send(type="input.text", text="one too many", id="late")
    (error,) = of_type(drive.read(), "error")
    assert (error["code"], error["request_id"]) == ("store_unavailable", "late")
    drive.feed(_stored())
    texts = [t.text for t in drive.session.conversation.turns if t.role == "user"]
    assert texts[-MAX_WAITING:] == [f"t{index}" for index in range(MAX_WAITING)]

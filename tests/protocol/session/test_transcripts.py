"""A speech engine's transcript in the core: the event, and the history's placeholder."""

from __future__ import annotations

from protocol.generation import FinishReason, OutputChunk, Transcript
from protocol.session import SessionLimits
from protocol.session.effects import PERSIST, StartGeneration
from protocol.session.inputs import EngineCounts, EngineOutput, SpeechStarted, TurnCommitted
from protocol.snapshot import conversation_snapshot
from tests.protocol.session.drive import Driver, of_type

TURN = TurnCommitted(b"\x01\x00" * 1600, 0, 100)


def _voice_turn(drive: Driver) -> str:
    (start,) = [e for e in drive.feed(TURN) if isinstance(e, StartGeneration)]
    return start.response_id


def _heard(drive: Driver, response_id: str, text: str, *, final: bool = True) -> list[object]:
    chunk = OutputChunk("", 0, transcript=Transcript(text, final))
    return list(drive.feed(EngineOutput(response_id, chunk)))


def test_partial_then_final_transcripts_are_events_and_the_final_one_replaces_the_placeholder() -> (
    None
):
    drive = Driver(audio={"output": True})
    response_id = _voice_turn(drive)
    assert drive.session.conversation.turns[-1].text == "[audio 100 ms]"
    version = drive.session.conversation.version
    assert PERSIST not in _heard(drive, response_id, "what is", final=False)
    # A partial result leaves the history alone: it may still change.
    assert drive.session.conversation.turns[-1].text == "[audio 100 ms]"
    assert PERSIST in _heard(drive, response_id, " what is the weather ")
    events = of_type(drive.read(), "input_audio.transcript")
    assert [(e["text"], e["final"], e["response_id"]) for e in events] == [
        ("what is", False, response_id),
        ("what is the weather", True, response_id),
    ]
    turns = drive.session.conversation.turns
    assert [(t.role, t.text) for t in turns] == [("user", "what is the weather")]
    # The store rewrites the conversation only when its version moved.
    assert drive.session.conversation.version > version
    snapshot = conversation_snapshot(drive.session)
    assert snapshot.turns == [["user", "what is the weather"]]
    drive.output(response_id, "sunny")
    drive.finish(response_id, FinishReason.STOP)
    assert [t.text for t in drive.session.conversation.turns] == ["what is the weather", "sunny"]


def test_a_transcript_carries_no_tokens_and_no_text() -> None:
    drive = Driver(audio={"output": True})
    response_id = _voice_turn(drive)
    _heard(drive, response_id, "hello there")
    drive.finish(response_id, FinishReason.STOP)
    events = drive.read()
    assert of_type(events, "response.text.delta") == []
    (done,) = of_type(events, "response.done")
    assert done["usage"]["output_tokens_generated"] == 0


def test_an_interrupted_answer_keeps_the_transcript_of_the_turn_it_answered() -> None:
    drive = Driver(audio={"output": True})
    response_id = _voice_turn(drive)
    _heard(drive, response_id, "tell me a story")
    drive.output(response_id, "once upon")
    drive.feed(SpeechStarted(150), EngineCounts(3, 4))
    events = drive.read()
    # The transcript is the user's, not the response's: a barge-in does not drop it.
    assert of_type(events, "input_audio.transcript")[0]["text"] == "tell me a story"
    assert of_type(events, "response.done")[0]["status"] == "interrupted"
    assert drive.session.conversation.turns[0].text == "tell me a story"


def test_a_transcript_after_the_response_ended_changes_nothing() -> None:
    drive = Driver(audio={"output": True})
    response_id = _voice_turn(drive)
    drive.feed(SpeechStarted(150), EngineCounts(3, 0))
    drive.read()
    _heard(drive, response_id, "too late")
    assert of_type(drive.read(), "input_audio.transcript") == []
    assert drive.session.conversation.turns[0].text == "[audio 100 ms]"


def test_an_empty_transcript_keeps_the_placeholder() -> None:
    drive = Driver(audio={"output": True})
    response_id = _voice_turn(drive)
    _heard(drive, response_id, "   ")
    (event,) = of_type(drive.read(), "input_audio.transcript")
    assert (event["text"], event["final"]) == ("", True)
    assert drive.session.conversation.turns[0].text == "[audio 100 ms]"


def test_a_huge_transcript_is_bounded_like_typed_input() -> None:
    drive = Driver(audio={"output": True}, limits=SessionLimits(max_input_chars=50))
    response_id = _voice_turn(drive)
    _heard(drive, response_id, "word " * 1000)
    (event,) = of_type(drive.read(), "input_audio.transcript")
    assert len(event["text"]) <= 50
    assert len(drive.session.conversation.turns[0].text) <= 50


def test_turns_committed_together_become_one_transcribed_turn() -> None:
    drive = Driver(audio={"output": True, "turn_detection": {"create_response": False}})
    drive.send(type="input.text", text="typed first")
    drive.feed(TURN)
    drive.feed(TurnCommitted(b"\x02\x00" * 800, 100, 150))
    effects = drive.send(type="response.create")
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    assert start.request.input_audio == TURN.audio + b"\x02\x00" * 800
    _heard(drive, start.response_id, "both turns")
    assert [t.text for t in drive.session.conversation.turns] == ["typed first", "both turns"]

"""Voice turn taking in the core: barge-in, answer when idle, false-interruption resume."""

from __future__ import annotations

from typing import Any

from protocol.generation import FinishReason
from protocol.session.effects import (
    AbortGeneration,
    ClearInputAudio,
    CommitInputAudio,
    StartGeneration,
)
from protocol.session.inputs import (
    EngineCounts,
    SpeechDiscarded,
    SpeechStarted,
    SpeechStopped,
    TurnCommitted,
)
from tests.protocol.session.drive import Driver, of_type

TURN = TurnCommitted(b"\x01\x00" * 1600, 0, 100)


def _voice(**detection: Any) -> Driver:
    return Driver(audio={"output": False, "turn_detection": detection})


def _starts(effects: list[Any]) -> list[StartGeneration]:
    return [e for e in effects if isinstance(e, StartGeneration)]


def test_a_committed_turn_starts_an_answer_with_its_audio() -> None:
    drive = _voice()
    effects = drive.feed(TURN)
    (start,) = _starts(effects)
    assert start.request.input_audio == TURN.audio
    assert start.request.prompt[-1].text == "[audio 100 ms]"
    events = drive.read()
    assert of_type(events, "input_audio.committed")[0]["duration_ms"] == 100
    assert of_type(events, "response.created")


def test_speech_while_an_answer_runs_interrupts_it() -> None:
    drive = _voice()
    (start,) = _starts(drive.feed(TURN))
    drive.output(start.response_id, "a long answer")
    effects = drive.feed(SpeechStarted(150), EngineCounts(3, 4))
    assert effects.index(AbortGeneration()) == 0
    (done,) = of_type(drive.read(), "response.done")
    assert (done["status"], done["reason"]) == ("interrupted", "speech")
    assert drive.core.turns is not None and drive.core.turns.barge_ins == 1


def test_no_barge_in_when_interrupt_response_is_off() -> None:
    drive = _voice(interrupt_response=False)
    _starts(drive.feed(TURN))
    effects = drive.feed(SpeechStarted(150))
    assert AbortGeneration() not in effects
    assert of_type(drive.read(), "response.done") == []


def test_a_turn_committed_while_an_answer_runs_is_answered_when_it_ends() -> None:
    drive = _voice(interrupt_response=False)
    (first,) = _starts(drive.feed(TURN))
    drive.feed(SpeechStarted(150))
    drive.feed(SpeechStopped(900, 750))
    assert _starts(drive.feed(TurnCommitted(b"\x02\x00" * 800, 150, 200))) == []
    (second,) = _starts(drive.finish(first.response_id, FinishReason.STOP))
    assert second.response_id != first.response_id
    assert second.request.input_audio == b"\x02\x00" * 800


def test_no_answer_when_idle_while_the_user_still_talks() -> None:
    drive = _voice(interrupt_response=False)
    (first,) = _starts(drive.feed(TURN))
    drive.feed(TurnCommitted(b"\x02\x00" * 800, 150, 200))
    drive.feed(SpeechStarted(300))
    assert _starts(drive.finish(first.response_id, FinishReason.STOP)) == []


def test_a_cough_resumes_the_answer_it_cut_off() -> None:
    drive = _voice(false_interruption_ms=300)
    (first,) = _starts(drive.feed(TURN))
    drive.output(first.response_id, "the answer ")
    drive.read()  # delivered: the continuation goes on from it
    drive.feed(SpeechStarted(150), EngineCounts(3, 2))
    (resumed,) = _starts(drive.feed(SpeechDiscarded(150, 300)))
    assert resumed.request.prefix == "the answer "
    events = drive.read()
    assert of_type(events, "input_audio.discarded")[0]["reason"] == "too_short"
    (created,) = of_type(events, "response.created")
    assert created["continues"] == first.response_id


def test_a_cough_after_the_conversation_moved_on_resumes_nothing() -> None:
    drive = _voice(false_interruption_ms=300)
    (first,) = _starts(drive.feed(TURN))
    drive.output(first.response_id, "the answer ")
    drive.read()
    drive.feed(SpeechStarted(150), EngineCounts(3, 2))
    drive.send(type="input.text", text="typed instead")
    assert _starts(drive.feed(SpeechDiscarded(150, 300))) == []


def test_commit_and_clear_are_carried_out_by_the_runtime() -> None:
    drive = _voice(type="manual")
    assert CommitInputAudio("m1") in drive.send(type="input_audio.commit", id="m1")
    assert ClearInputAudio() in drive.send(type="input_audio.clear")
    assert of_type(drive.read(), "input_audio.cleared")


def test_audio_messages_need_an_audio_session() -> None:
    drive = Driver()
    drive.send(type="input_audio.commit", id="m1")
    (error,) = of_type(drive.read(), "error")
    assert (error["code"], error["request_id"]) == ("audio_not_enabled", "m1")

"""``session.update`` of each setting, refused updates, and the settings a record keeps."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.errors import ProtocolViolation
from protocol.generation import FinishReason
from protocol.messages import parse_client_message
from protocol.session.effects import ConfigureVoice, StartGeneration
from protocol.snapshot import (
    ConversationSnapshot,
    StreamSnapshot,
    conversation_snapshot,
    restore_session,
    stream_snapshot,
)
from tests.protocol.session.drive import WEATHER, Driver, of_type

VOICE: dict[str, Any] = {"sample_rate": 16000, "output": True}


def _prompt_of(drive: Driver, text: str = "hello", **fields: Any) -> StartGeneration:
    effects = drive.send(type="response.create", input=text, **fields)
    (start,) = [e for e in effects if isinstance(e, StartGeneration)]
    return start


def test_instructions_take_effect_for_the_next_response_and_empty_clears_them() -> None:
    drive = Driver()
    drive.send(type="session.update", instructions="speak like a pirate")
    (updated,) = of_type(drive.read(), "session.updated")
    assert updated["instructions"] == "speak like a pirate"
    assert updated["tool_rounds"] == "server"
    start = _prompt_of(drive)
    prompt = start.request.prompt
    assert (prompt[0].role, prompt[0].text) == ("system", "speak like a pirate")
    drive.finish(start.response_id, FinishReason.STOP)
    drive.send(type="session.update", instructions="")
    assert of_type(drive.read(), "session.updated")[-1]["instructions"] == ""
    prompt = _prompt_of(drive, "again").request.prompt
    assert all(t.role != "system" for t in prompt)


def test_an_empty_update_is_an_in_band_error_and_changes_nothing() -> None:
    drive = Driver(tools=[WEATHER])
    drive.send(type="session.update", id="u1")
    events = drive.read()
    (error,) = of_type(events, "error")
    assert error["code"] == "missing_field" and error["request_id"] == "u1"
    assert of_type(events, "session.updated") == []
    assert list(drive.session.tools.tools) == ["get_weather"]


def test_a_text_session_given_audio_becomes_a_voice_session() -> None:
    drive = Driver()
    assert drive.core.turns is None
    effects = drive.send(type="session.update", audio=VOICE)
    (configure,) = [e for e in effects if isinstance(e, ConfigureVoice)]
    assert configure.settings.sample_rate == 16000
    assert drive.core.turns is not None
    assert drive.session.audio is not None and drive.session.audio["output"] is True
    assert of_type(drive.read(), "session.updated")[0]["audio"]["sample_rate"] == 16000
    assert _prompt_of(drive).request.audio_output is True


def test_voice_output_turned_off_takes_effect_for_the_next_response() -> None:
    drive = Driver(audio=VOICE)
    drive.send(type="session.update", audio={**VOICE, "output": False})
    assert _prompt_of(drive).request.audio_output is False


def test_new_turn_detection_reaches_turn_taking_and_buffered_turn_audio_is_kept() -> None:
    drive = Driver(audio=VOICE)
    turns = drive.core.turns
    assert turns is not None
    turns.keep_audio(b"\x01\x00" * 160)
    turns.speaking = True
    detection = {"type": "server_vad", "create_response": False, "interrupt_response": False}
    effects = drive.send(type="session.update", audio={**VOICE, "turn_detection": detection})
    assert [e for e in effects if isinstance(e, ConfigureVoice)]
    assert drive.core.turns is turns, "the voice state (its kept audio) is the same"
    assert turns.settings.turn_detection.create_response is False
    assert turns.settings.turn_detection.interrupt_response is False
    assert len(turns.pending_audio) == 320
    assert not turns.speaking, "the new detector hears nothing yet"


def test_another_sample_rate_is_refused_and_nothing_changes() -> None:
    drive = Driver(audio=VOICE, tools=[WEATHER])
    effects = drive.send(
        type="session.update", instructions="new", audio={**VOICE, "sample_rate": 24000}
    )
    assert not [e for e in effects if isinstance(e, ConfigureVoice)]
    (error,) = of_type(drive.read(), "error")
    assert error["code"] == "invalid_field" and "16000 Hz" in error["message"]
    assert drive.session.conversation.instructions is None
    assert drive.core.turns is not None and drive.core.turns.settings.sample_rate == 16000


def test_a_bad_tool_schema_refuses_the_whole_update() -> None:
    drive = Driver(tools=[WEATHER])
    bad = {"name": "x", "parameters": {"type": "object", "properties": 3}}
    drive.send(type="session.update", instructions="changed?", tools=[bad])
    assert of_type(drive.read(), "error")
    assert drive.session.conversation.instructions is None
    assert list(drive.session.tools.tools) == ["get_weather"]


def test_every_updated_setting_is_in_the_stored_snapshot() -> None:
    drive = Driver()
    version = drive.session.conversation.version
    drive.send(
        type="session.update",
        instructions="be brief",
        audio=VOICE,
        tool_rounds="client",
        tools=[WEATHER],
    )
    assert drive.session.conversation.version > version, "a store rewrites the record"
    stored = ConversationSnapshot.from_dict(conversation_snapshot(drive.session).to_dict())
    assert stored.instructions == "be brief"
    assert stored.audio is not None and stored.audio["output"] is True
    assert stored.tool_rounds == "client"
    assert [t["name"] for t in stored.tools] == ["get_weather"]
    restored, _ = restore_session(
        "sess",
        stored,
        StreamSnapshot.from_dict(stream_snapshot(drive.session).to_dict()),
        [],
        client_last_seq=0,
        partial_text="",
    )
    assert restored.tool_rounds == "client"
    assert restored.conversation.instructions == "be brief"
    assert restored.audio == drive.session.audio


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"instructions": "x" * 100_001}, "invalid_field"),
        ({"tool_rounds": "both"}, "invalid_field"),
        ({"voice": "alloy"}, "unknown_field"),
        ({"audio": {"sample_rate": 8000}}, "invalid_field"),
    ],
)
def test_malformed_updates_are_refused_when_parsed(fields: dict[str, Any], code: str) -> None:
    with pytest.raises(ProtocolViolation) as refused:
        parse_client_message({"type": "session.update", **fields})
    assert refused.value.code.value == code

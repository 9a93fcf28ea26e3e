"""Golden tests: native event sequences in, the exact Realtime events out (no event loop)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from protocol.dialects.realtime.event_ids import parse_event_id
from protocol.dialects.realtime.server_events import session_created, translate_event
from tests.openai_sdk import openai_sdk_python
from tests.protocol.dialects.realtime.scenarios import SCENARIOS, USAGE, text_state

GOLDEN = Path(__file__).parent / "golden"
"""A Python with ``openai[realtime]`` installed (its own environment: it pins websockets<16)."""


def translate_all(name: str) -> list[dict[str, Any]]:
    make, events = SCENARIOS[name]
    state = make()
    return [out for message in events for out in translate_event(state, message)]


def golden(name: str) -> list[dict[str, Any]]:
    lines = (GOLDEN / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_translates_to_its_golden_events(name: str) -> None:
    assert translate_all(name) == golden(name)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_translation_is_deterministic_so_a_replay_gives_the_same_ids(name: str) -> None:
    assert translate_all(name) == translate_all(name)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_event_id_names_its_native_seq_and_position(name: str) -> None:
    make, events = SCENARIOS[name]
    state = make()
    for message in events:
        for index, out in enumerate(translate_event(state, message)):
            position = parse_event_id(out["event_id"])
            assert position is not None
            assert (position.seq, position.index) == (message["seq"], index)


def test_session_created_is_complete_and_not_a_session_event() -> None:
    event = session_created(text_state(), "rt_1")
    assert event["type"] == "session.created"
    assert parse_event_id(event["event_id"]) is None
    session = event["session"]
    assert session["output_modalities"] == ["text"]
    assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert session["audio"]["input"]["turn_detection"]["type"] == "server_vad"
    # What a client sends back (in headers) to resume: the SDK keeps the unknown field.
    assert event["resume"] == {"session_id": "sess_A", "resume_token": "rt_1"}


HOSTILE_NATIVE: list[dict[str, Any]] = [
    {"type": "response.text.delta", "seq": 1, "response_id": "resp_9", "delta": "x"},
    {"type": "response.text.delta", "seq": 2, "response_id": ["resp_1"], "delta": "x"},
    {"type": "response.text.delta", "seq": 3, "response_id": "resp_1", "delta": 7},
    {"type": "response.audio.delta", "seq": 4, "response_id": "resp_1", "audio": "not bytes"},
    {"type": "response.tool_call", "seq": 5, "response_id": "resp_1", "call_id": None},
    {"type": "response.done", "seq": 6, "response_id": "resp_9", "status": "completed"},
    {"type": "input_audio.transcript", "seq": 7, "text": "no turn", "final": True},
    {"type": "heartbeat", "server_time_ms": 1, "last_seq": 3},
    {"type": "response.text.delta", "response_id": "resp_1", "delta": "no seq"},
    {"type": "response.text.delta", "seq": -1, "response_id": "resp_1", "delta": "bad seq"},
    {"type": "something.new", "seq": 8},
    {"type": 5, "seq": 9},
    {"seq": 10},
]


def test_malformed_or_unknown_native_events_become_nothing() -> None:
    state = text_state()
    translate_event(state, {"type": "response.created", "seq": 1, "response_id": "resp_1"})
    for message in HOSTILE_NATIVE:
        assert translate_event(state, message) == [], message
    done = translate_event(
        state,
        {"type": "response.done", "seq": 11, "response_id": "resp_1", "status": "?", "usage": 5},
    )
    assert [event["type"] for event in done] == ["response.done"]
    assert done[0]["response"]["status"] == "cancelled"
    assert done[0]["response"]["usage"] is None
    assert state.responses == {}


@pytest.mark.parametrize("status", ["interrupted", "cancelled", "incomplete", "failed"])
@pytest.mark.parametrize("reason", [["x"], {"a": 1}, 5, None])
def test_an_ending_whose_reason_is_not_text_is_a_plain_one(status: str, reason: Any) -> None:
    # A damaged stored event: a reason of another type is no known reason.
    state = text_state()
    translate_event(state, {"type": "response.created", "seq": 1, "response_id": "resp_1"})
    message = {"type": "response.done", "seq": 2, "response_id": "resp_1", "status": status}
    (done,) = translate_event(state, {**message, "reason": reason})
    details = done["response"]["status_details"]
    json.dumps(done, allow_nan=False)
    if status in ("interrupted", "cancelled"):
        assert details["reason"] == "client_cancelled", details


def test_usage_in_the_realtime_shape() -> None:
    events = translate_all("text_turn")
    usage = events[-1]["response"]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (
        USAGE["input_tokens"],
        USAGE["output_tokens_generated"],
        15,
    )


def test_golden_events_are_complete_objects_of_the_sdk_types() -> None:
    checker = Path(__file__).parent / "sdk_schema_check.py"
    files = sorted(str(path) for path in GOLDEN.glob("*.jsonl"))
    result = subprocess.run(
        [openai_sdk_python(), str(checker), *files], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_text_only_session_gets_no_audio_deltas() -> None:
    state = text_state()
    translate_event(state, {"type": "response.created", "seq": 1, "response_id": "resp_1"})
    audio = {"type": "response.audio.delta", "seq": 2, "response_id": "resp_1", "audio": b"\0\0"}
    assert translate_event(state, audio) == []

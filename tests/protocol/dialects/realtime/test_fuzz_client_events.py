"""Fuzz the Realtime client-event translation with hostile events.

Valid events of every client type are mutated (fields set to arbitrary values,
added, removed, at any depth, nested past the limit) and fed, a few in a row, to
:func:`translate_client_event` on a session with a turn behind it. Property: each
becomes a :class:`Translation` (never an exception, which would close the
connection with 1011) whose answers encode as a valid UTF-8 text frame, whose
``error`` answers have the Realtime shape, and whose native messages are ones the
core parses back to themselves.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.dialects.realtime.client_events import (
    InputAudio,
    Translation,
    translate_client_event,
)
from protocol.dialects.realtime.client_models import CLIENT_EVENT_TYPES
from protocol.dialects.realtime.server_events import translate_event
from protocol.dialects.realtime.state import DialectState
from protocol.encoding import JsonCodec
from protocol.errors import ProtocolViolation
from protocol.messages import parse_client_message
from protocol.session.inputs import SessionMessage
from tests.protocol.dialects.realtime.scenarios import TEXT_TURN, text_state, voice_state
from tests.protocol.fuzz_inputs import (
    json_frame,
    json_values,
    mutated_messages,
    value_paths,
    values_like,
)

FUZZ = settings(max_examples=300, deadline=None)
JSON = JsonCodec()
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "weather by city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}

VALID: list[dict[str, Any]] = [
    {
        "type": "session.update",
        "event_id": "u1",
        "session": {
            "type": "realtime",
            "instructions": "Be brief.",
            "output_modalities": ["audio"],
            "tools": [TOOL],
            "tool_choice": "auto",
            "max_output_tokens": 200,
            "audio": {
                "input": {
                    "format": {"type": "audio/pcm", "rate": 24000},
                    "turn_detection": {
                        "type": "server_vad",
                        "threshold": 0.5,
                        "prefix_padding_ms": 300,
                        "silence_duration_ms": 500,
                        "create_response": True,
                        "interrupt_response": True,
                    },
                    "transcription": {"model": "whisper", "language": "en"},
                },
                "output": {"format": {"type": "audio/pcm"}, "voice": "alloy", "speed": 1.0},
            },
        },
    },
    {
        "type": "conversation.item.create",
        "event_id": "c1",
        "previous_item_id": None,
        "item": {
            "type": "message",
            "id": "mine_1",
            "role": "user",
            "content": [{"type": "input_text", "text": "héllo 🙂"}],
        },
    },
    {
        "type": "conversation.item.create",
        "item": {"type": "function_call_output", "call_id": "call_1", "output": '{"t": 18}'},
    },
    {
        "type": "conversation.item.truncate",
        "item_id": "item_resp_1_0",
        "content_index": 0,
        "audio_end_ms": 120,
    },
    {"type": "conversation.item.delete", "item_id": "item_resp_1_0"},
    {"type": "conversation.item.retrieve", "event_id": "r1", "item_id": "item_resp_1_0"},
    {"type": "input_audio_buffer.append", "audio": "AAABAAIA"},
    {"type": "input_audio_buffer.commit", "event_id": "a1"},
    {"type": "input_audio_buffer.clear"},
    {
        "type": "response.create",
        "response": {
            "instructions": "Answer.",
            "output_modalities": ["text"],
            "max_output_tokens": "inf",
            "tools": [TOOL],
            "tool_choice": "auto",
            "conversation": "auto",
            "metadata": {"k": "v"},
        },
    },
    {"type": "response.cancel", "response_id": "resp_1"},
    {"type": "output_audio_buffer.clear", "event_id": "o1"},
]


def after_a_turn(state: DialectState) -> DialectState:
    """``state`` with a text turn translated: it knows a response and its item."""
    for event in TEXT_TURN:
        translate_event(state, event)
    return state


def check(translation: Any) -> None:
    """The property every translated event holds."""
    assert isinstance(translation, Translation)
    for reply in translation.replies:
        frame = JSON.encode(reply)
        assert isinstance(frame, str)
        frame.encode("utf-8")  # a WebSocket text frame must be valid UTF-8
        if reply["type"] == "error":
            assert set(reply["error"]) == {"type", "code", "message", "param", "event_id"}
            assert all(type(v) in (str, type(None)) for v in reply["error"].values())
    for item in translation.native:
        if isinstance(item, InputAudio):
            assert len(item.pcm) % 2 == 0
            continue
        assert isinstance(item, SessionMessage)
        dumped = item.model_dump(by_alias=True, exclude_none=True)
        assert parse_client_message(JSON.decode(JSON.encode(dumped))) == item


def test_the_valid_events_cover_every_type_and_translate() -> None:
    assert {e["type"] for e in VALID} == CLIENT_EVENT_TYPES
    for event in VALID:
        translation = translate_client_event(after_a_turn(voice_state()), event)
        check(translation)
        refused = [r for r in translation.replies if r["type"] == "error"]
        # Deleting items is the one event refused as it is.
        assert bool(refused) == (event["type"] == "conversation.item.delete"), refused


@FUZZ
@given(st.lists(mutated_messages("json", VALID), min_size=1, max_size=4), st.booleans())
def test_mutated_events_in_a_row(events: list[dict[Any, Any]], voice: bool) -> None:
    state = after_a_turn(voice_state() if voice else text_state())
    for event in events:
        # As the transport decodes it: a JSON text frame, lone surrogates as \u escapes.
        try:
            decoded = JSON.decode(json_frame(event))
        except ProtocolViolation:
            continue  # answered by the codec, before any translation
        check(translate_client_event(state, decoded))


@FUZZ
@given(mutated_messages("json", VALID))
def test_mutated_events_as_given(event: dict[Any, Any]) -> None:
    # What json.loads cannot return (NaN keys, non-string keys) reaches no translation
    # in the server, but the translation must still answer it, not raise.
    check(translate_client_event(after_a_turn(voice_state()), event))


FIELDS = [
    (event, path) for event in VALID for path in value_paths(event) if path not in ((), ("type",))
]
"""Every field and item of every valid event, but its type: each is fuzzed on its own."""


@pytest.mark.parametrize(
    ("event", "path"), FIELDS, ids=[f"{e['type']}:{'.'.join(map(str, p))}" for e, p in FIELDS]
)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_each_field_replaced(
    event: dict[str, Any], path: tuple[Any, ...], data: st.DataObject
) -> None:
    # Edits at random rarely reach one field's bounds with the rest valid: one at a time.
    edited = copy.deepcopy(event)
    parent: Any = edited
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = data.draw(values_like(parent[path[-1]], packable=False) | json_values)
    check(translate_client_event(after_a_turn(voice_state()), edited))

"""Golden tests: Realtime client events in, the exact native messages and answers out."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from protocol import messages as native
from protocol.dialects.realtime.client_events import (
    InputAudio,
    Translation,
    translate_client_event,
)
from protocol.dialects.realtime.server_events import (
    conversation_created,
    rate_limits_updated,
    session_created,
    translate_event,
)
from protocol.dialects.realtime.state import DialectState
from protocol.encoding import JsonCodec
from protocol.json_value import MAX_VALUES
from protocol.messages import parse_client_message
from tests.protocol.dialects.realtime.scenarios import (
    CLIENT_EVENTS,
    TEXT_TURN,
    text_state,
    voice_state,
)

GOLDEN = Path(__file__).parent / "golden"
RESUME_TOKEN = "rt_golden"
RATE_LIMITS = [
    {"name": "requests", "limit": 50, "remaining": 47, "reset_seconds": 0.3},
]


def natives(translation: Translation) -> list[Any]:
    return list(translation.native)


def only_error(translation: Translation) -> dict[str, Any]:
    assert translation.native == ()
    assert len(translation.replies) == 1
    reply = translation.replies[0]
    assert reply["type"] == "error"
    assert set(reply["error"]) == {"type", "code", "message", "param", "event_id"}
    error: dict[str, Any] = reply["error"]
    return error


def test_user_text_item_becomes_input_text_and_is_answered_added_then_done() -> None:
    state = text_state()
    out = translate_client_event(
        state,
        {
            "type": "conversation.item.create",
            "event_id": "c1",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Hi there"}],
            },
        },
    )
    # The native request id is the dialect's own (an error names "c1" again).
    assert natives(out) == [native.InputText(type="input.text", id="rt_1", text="Hi there")]
    item = {
        "id": "item_user_c1",
        "object": "realtime.item",
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [
            {
                "type": "input_text",
                "text": "Hi there",
                "audio": None,
                "transcript": None,
                "image_url": None,
                "detail": None,
            }
        ],
    }
    assert out.replies == [
        {
            "type": "conversation.item.added",
            "event_id": "event_0_0_c1",
            "previous_item_id": None,
            "item": item,
        },
        {
            "type": "conversation.item.done",
            "event_id": "event_0_0_c2",
            "previous_item_id": None,
            "item": item,
        },
    ]


def test_function_call_output_becomes_a_tool_result_with_its_json_output() -> None:
    state = voice_state()
    out = translate_client_event(
        state,
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": "call_1", "output": '{"ok":true}'},
        },
    )
    assert natives(out) == [
        native.ToolResult(type="tool.result", id="rt_1", call_id="call_1", output={"ok": True})
    ]
    # Reported only once the session applied it (an output for no such call gets
    # the error alone).
    assert out.replies == []
    assert (
        translate_event(state, {"type": "tool.result.accepted", "seq": 1, "call_id": "call_1"})
        == []
    )
    assert [reply["type"] for reply in state.take_ready_replies()] == [
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert state.take_ready_replies() == []
    plain = translate_client_event(
        state,
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": "call_2", "output": "sunny"},
        },
    )
    assert natives(plain) == [
        native.ToolResult(type="tool.result", id="rt_2", call_id="call_2", output="sunny")
    ]


@pytest.mark.parametrize(
    ("output", "parsed"),
    [
        # The native message is level 1 and its output level 2: 63 levels fit, 64 not.
        ("[" * 63 + "]" * 63, True),
        ("[" * 64 + "]" * 64, False),
        # The message (itself, type, id, call_id) holds four values besides the output's.
        ("[" + ",".join(["0"] * (MAX_VALUES - 5)) + "]", True),
        ("[" + ",".join(["0"] * (MAX_VALUES - 4)) + "]", False),
    ],
)
def test_a_json_output_the_native_message_cannot_carry_goes_as_text(
    output: str, parsed: bool
) -> None:
    item = {"type": "function_call_output", "call_id": "call_1", "output": output}
    out = translate_client_event(voice_state(), {"type": "conversation.item.create", "item": item})
    [result] = natives(out)
    assert isinstance(result, native.ToolResult)
    assert (result.output != output) == parsed
    # Either way the core takes the message as the translation made it.
    codec = JsonCodec()
    dumped = result.model_dump(by_alias=True, exclude_none=True)
    assert parse_client_message(codec.decode(codec.encode(dumped))) == result


def test_audio_buffer_events() -> None:
    state = voice_state()
    pcm = b"\x01\x00\xff\x7f"
    append = {"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}
    assert translate_client_event(state, append) == Translation((InputAudio(pcm),))
    assert natives(translate_client_event(state, {"type": "input_audio_buffer.commit"})) == [
        native.InputAudioCommit(type="input_audio.commit")
    ]
    assert natives(translate_client_event(state, {"type": "input_audio_buffer.clear"})) == [
        native.InputAudioClear(type="input_audio.clear")
    ]
    empty = {"type": "input_audio_buffer.append", "audio": ""}
    assert translate_client_event(state, empty) == Translation()


def test_response_create_cancel_and_output_audio_clear() -> None:
    state = text_state()
    create = {
        "type": "response.create",
        "event_id": "r1",
        "response": {
            "max_output_tokens": 50,
            "output_modalities": ["text"],
            "metadata": {"a": "b"},
        },
    }
    assert natives(translate_client_event(state, create)) == [
        native.ResponseCreate(
            type="response.create", id="rt_1", max_output_tokens=50, audio_output=False
        )
    ]
    assert natives(translate_client_event(state, {"type": "response.create"})) == [
        native.ResponseCreate(type="response.create", id="rt_2")
    ]
    cancel = {"type": "response.cancel", "response_id": "resp_1"}
    assert natives(translate_client_event(state, cancel)) == [
        native.ResponseCancel(type="response.cancel", response_id="resp_1")
    ]
    translate_event(state, TEXT_TURN[0])
    cleared = translate_client_event(state, {"type": "output_audio_buffer.clear"})
    assert natives(cleared) == [native.ResponseInterrupt(type="response.interrupt")]
    assert cleared.replies == [
        {"type": "output_audio_buffer.cleared", "event_id": "event_0_0_c1", "response_id": "resp_1"}
    ]


def test_truncate_and_retrieve_name_an_assistant_item_by_its_id() -> None:
    state = text_state()
    for message in TEXT_TURN:
        translate_event(state, message)
    out = translate_client_event(
        state,
        {
            "type": "conversation.item.truncate",
            "item_id": "item_resp_1_0",
            "content_index": 0,
            "audio_end_ms": 1500,
        },
    )
    assert natives(out) == [
        native.OutputAudioPlayed(type="output_audio.played", response_id="resp_1", played_ms=1500)
    ]
    assert out.replies == [
        {
            "type": "conversation.item.truncated",
            "event_id": "event_0_0_c1",
            "item_id": "item_resp_1_0",
            "content_index": 0,
            "audio_end_ms": 1500,
        }
    ]
    got = translate_client_event(
        state, {"type": "conversation.item.retrieve", "item_id": "item_resp_1_0"}
    )
    assert got.native == ()
    assert got.replies[0]["type"] == "conversation.item.retrieved"
    assert got.replies[0]["item"]["content"][0]["text"] == "Hello"


def b64(size: int) -> str:
    return base64.b64encode(b"\x00" * size).decode()


HOSTILE: list[tuple[Any, str, str | None]] = [
    ([], "invalid_event", None),
    ("session.update", "invalid_event", None),
    ({}, "missing_required_parameter", "type"),
    ({"type": "transcription_session.update"}, "unknown_event", "type"),
    ({"type": 42}, "unknown_event", "type"),
    ({"type": "response.create", "surprise": 1}, "unknown_parameter", "surprise"),
    ({"type": "response.cancel", "response_id": 7}, "invalid_value", "response_id"),
    ({"type": "input_audio_buffer.append"}, "missing_required_parameter", "audio"),
    ({"type": "input_audio_buffer.append", "audio": 12}, "invalid_value", "audio"),
    ({"type": "input_audio_buffer.append", "audio": "***not base64***"}, "invalid_value", "audio"),
    ({"type": "input_audio_buffer.append", "audio": "AAA"}, "invalid_value", "audio"),
    ({"type": "input_audio_buffer.append", "audio": "AAAAAAAA\n"}, "invalid_value", "audio"),
    ({"type": "input_audio_buffer.append", "audio": "é" * 8}, "invalid_value", "audio"),
    ({"type": "input_audio_buffer.append", "audio": b64(3)}, "invalid_value", "audio"),
    (
        {"type": "input_audio_buffer.append", "audio": b64(4 * 1024 * 1024)},
        "invalid_value",
        "audio",
    ),
    ({"type": "conversation.item.create", "item": "hi"}, "invalid_value", "item"),
    (
        {
            "type": "conversation.item.create",
            "item": {"type": "message", "role": "system", "content": []},
        },
        "unsupported_item",
        "item.type",
    ),
    (
        {
            "type": "conversation.item.create",
            "item": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_audio", "audio": "AAAA"}],
            },
        },
        "unsupported_content",
        "item.content",
    ),
    (
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": "c"},
        },
        "missing_required_parameter",
        "item.output",
    ),
    ({"type": "conversation.item.delete", "item_id": "item_x"}, "unsupported_event", "type"),
    ({"type": "conversation.item.retrieve", "item_id": "item_x"}, "invalid_value", "item_id"),
    (
        {
            "type": "conversation.item.truncate",
            "item_id": "item_x",
            "content_index": 0,
            "audio_end_ms": 1,
        },
        "invalid_value",
        "item_id",
    ),
    (
        {
            "type": "conversation.item.truncate",
            "item_id": "i",
            "content_index": 0,
            "audio_end_ms": -1,
        },
        "invalid_value",
        "audio_end_ms",
    ),
    (
        {"type": "session.update", "session": {"tool_choice": "required"}},
        "unsupported_value",
        "session.tool_choice",
    ),
    (
        {
            "type": "session.update",
            "session": {"audio": {"input": {"format": {"type": "audio/pcmu"}}}},
        },
        "unsupported_value",
        "session.audio.input.format",
    ),
    (
        {
            "type": "session.update",
            "session": {"audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}},
        },
        "unsupported_value",
        "session.audio.input.turn_detection.type",
    ),
    (
        {
            "type": "session.update",
            "session": {"tools": [{"type": "function", "name": "bad name"}]},
        },
        "invalid_value",
        "session.tools.0.name",
    ),
    ({"type": "session.update", "session": {"instructions": "\ud800"}}, "invalid_value", None),
    (
        {"type": "response.create", "response": {"input": []}},
        "unsupported_value",
        "response.input",
    ),
    (
        {"type": "response.create", "response": {"tools": [{"type": "function", "name": "a b"}]}},
        "invalid_value",
        "response.tools.0.name",
    ),
    (
        {"type": "response.create", "response": {"tool_choice": "required"}},
        "unsupported_value",
        "response.tool_choice",
    ),
    (
        {"type": "response.create", "response": {"conversation": "none"}},
        "unsupported_value",
        "response.conversation",
    ),
    (
        {"type": "response.create", "response": {"max_output_tokens": 0}},
        "invalid_value",
        "response.max_output_tokens",
    ),
]


@pytest.mark.parametrize(("event", "code", "param"), HOSTILE)
def test_bad_or_unsupported_events_are_an_error_event_never_an_exception(
    event: Any, code: str, param: str | None
) -> None:
    state = voice_state()
    before = state.config
    error = only_error(translate_client_event(state, event))
    assert (error["code"], error["param"]) == (code, param)
    assert error["type"] == "invalid_request_error"
    assert state.config == before


def test_error_echoes_a_safe_client_event_id_only() -> None:
    state = DialectState(text_state().config)
    ok = only_error(translate_client_event(state, {"type": "nope", "event_id": "e1"}))
    assert ok["event_id"] == "e1"
    long_id = only_error(translate_client_event(state, {"type": "nope", "event_id": "x" * 129}))
    assert long_id["event_id"] is None
    odd = only_error(translate_client_event(state, {"type": "nope", "event_id": "\udc80"}))
    assert odd["event_id"] is None


def test_deeply_nested_input_is_refused_without_recursion() -> None:
    nested: Any = {}
    for _ in range(100_000):
        nested = {"a": nested}
    event = {"type": "session.update", "session": {"tools": [{"name": "t", "parameters": nested}]}}
    assert only_error(translate_client_event(voice_state(), event))["code"] == "invalid_value"


def test_the_dialects_own_answers_match_their_golden_events() -> None:
    state = voice_state()
    replies = [session_created(state, RESUME_TOKEN), conversation_created(state)]
    for event in CLIENT_EVENTS:
        translation = translate_client_event(state, event)
        replies.extend(translation.replies)
        for message in translation.native:
            if isinstance(message, native.ToolResult):
                # The ledger applied it: the item is reported added now.
                accepted = {"type": "tool.result.accepted", "seq": 1, "call_id": message.call_id}
                assert translate_event(state, accepted | {"duplicate": False}) == []
                replies.extend(state.take_ready_replies())
    replies.append(rate_limits_updated(state, RATE_LIMITS))
    replies.append(rate_limits_updated(state, []))
    lines = (GOLDEN / "client_replies.jsonl").read_text(encoding="utf-8").splitlines()
    assert replies == [json.loads(line) for line in lines]

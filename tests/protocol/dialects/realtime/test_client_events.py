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
from tests.protocol.dialects.realtime.scenarios import (
    CLIENT_EVENTS,
    TEXT_TURN,
    TOOL_CALL,
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
    assert natives(out) == [native.InputText(type="input.text", id="c1", text="Hi there")]
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
        native.ToolResult(type="tool.result", call_id="call_1", output={"ok": True})
    ]
    assert [reply["type"] for reply in out.replies] == [
        "conversation.item.added",
        "conversation.item.done",
    ]
    plain = translate_client_event(
        state,
        {
            "type": "conversation.item.create",
            "item": {"type": "function_call_output", "call_id": "call_2", "output": "sunny"},
        },
    )
    assert natives(plain) == [
        native.ToolResult(type="tool.result", call_id="call_2", output="sunny")
    ]


def test_session_update_is_one_native_update_applied_when_the_core_answers() -> None:
    state = voice_state()
    before = state.config
    out = translate_client_event(
        state,
        {
            "type": "session.update",
            "event_id": "s1",
            "session": {
                "type": "realtime",
                "instructions": "Be brief.",
                "output_modalities": ["text"],
                "tools": [
                    {"type": "function", "name": "get_time", "parameters": {"type": "object"}}
                ],
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": 24000},
                        "turn_detection": {
                            "type": "server_vad",
                            "threshold": 0.6,
                            "silence_duration_ms": 700,
                            "create_response": False,
                        },
                    }
                },
            },
        },
    )
    tool = native.ToolSpec(name="get_time", parameters={"type": "object"})
    detection = native.TurnDetection(threshold=0.6, silence_duration_ms=700, create_response=False)
    assert natives(out) == [
        native.SessionUpdate(
            type="session.update",
            id="s1",
            tools=[tool],
            instructions="Be brief.",
            audio=native.AudioSettings(sample_rate=24000, output=False, turn_detection=detection),
            tool_rounds="client",
        )
    ]
    # Nothing shown before the core accepts it: its session.updated is the answer.
    assert out.replies == []
    assert state.config == before
    in_force = {
        "type": "session.updated",
        "seq": 4,
        "tools": ["get_time"],
        "instructions": "Be brief.",
        "audio": native.AudioSettings(
            sample_rate=24000, output=False, turn_detection=detection
        ).model_dump(),
        "tool_rounds": "client",
    }
    (reply,) = translate_event(state, in_force)
    assert reply["type"] == "session.updated"
    assert reply["event_id"] == "event_4_0"
    session = reply["session"]
    assert session["instructions"] == "Be brief."
    assert session["output_modalities"] == ["text"]
    assert session["tools"] == [
        {
            "type": "function",
            "name": "get_time",
            "description": "",
            "parameters": {"type": "object"},
        }
    ]
    vad = session["audio"]["input"]["turn_detection"]
    assert (vad["threshold"], vad["silence_duration_ms"], vad["create_response"]) == (
        0.6,
        700,
        False,
    )
    assert state.config.output_modalities == ("text",)
    assert state.pending == {} and state.requested is None


def test_a_session_update_the_core_refuses_is_an_error_and_changes_nothing() -> None:
    state = voice_state()
    before = state.config
    update = {"type": "session.update", "event_id": "s7", "session": {"instructions": "Pirate."}}
    translate_client_event(state, update)
    later = {"type": "session.update", "session": {"output_modalities": ["text"]}}
    (second,) = natives(translate_client_event(state, later))
    # The second is built on the first as requested (one view of pending updates).
    assert second.instructions is None and second.audio.output is False
    refused = {
        "type": "error",
        "seq": 3,
        "code": "invalid_field",
        "message": "no",
        "request_id": "s7",
    }
    (error,) = translate_event(state, refused)
    assert error["error"]["event_id"] == "s7"
    assert state.config == before
    assert state.requested is not None and state.requested.instructions == before.instructions
    accepted = {
        "type": "session.updated",
        "seq": 4,
        "tools": ["set_light"],
        "instructions": "",
        "audio": native.AudioSettings(sample_rate=24000, output=False).model_dump(),
        "tool_rounds": "client",
    }
    (reply,) = translate_event(state, accepted)
    assert reply["session"]["instructions"] == ""
    assert reply["session"]["output_modalities"] == ["text"]
    assert reply["session"]["tools"][0]["name"] == "set_light"
    assert state.config.tools == before.tools


def test_turn_detection_null_is_manual_turns_without_responses_of_their_own() -> None:
    state = voice_state()
    out = translate_client_event(
        state, {"type": "session.update", "session": {"audio": {"input": {"turn_detection": None}}}}
    )
    (update,) = natives(out)
    assert update.audio == native.AudioSettings(
        sample_rate=24000,
        output=True,
        turn_detection=native.TurnDetection(type="manual", create_response=False),
    )
    assert (update.instructions, update.tools) == (None, None)
    in_force = {"type": "session.updated", "seq": 1, "audio": update.audio.model_dump()}
    (reply,) = translate_event(state, in_force)
    assert state.config.turn_detection is None
    assert reply["session"]["audio"]["input"]["turn_detection"] is None


def test_a_setting_only_the_dialect_holds_still_goes_through_the_core_in_order() -> None:
    state = voice_state()
    out = translate_client_event(
        state, {"type": "session.update", "session": {"max_output_tokens": 40}}
    )
    assert natives(out) == [
        native.SessionUpdate(type="session.update", id="rt_1", tool_rounds="client")
    ]
    translate_event(state, {"type": "session.updated", "seq": 1, "tools": ["set_light"]})
    assert state.config.max_output_tokens == 40
    # The session's max_output_tokens applies to a response.create without its own.
    (create,) = natives(translate_client_event(state, {"type": "response.create"}))
    assert create.max_output_tokens == 40


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
            type="response.create", id="r1", max_output_tokens=50, audio_output=False
        )
    ]
    assert natives(translate_client_event(state, {"type": "response.create"})) == [
        native.ResponseCreate(type="response.create", id="rt_1")
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


def test_response_create_overrides_become_the_native_ones_and_show_in_the_response() -> None:
    state = voice_state()
    create = {
        "type": "response.create",
        "event_id": "r9",
        "response": {
            "instructions": "Answer in French.",
            "output_modalities": ["text"],
            "max_output_tokens": 20,
            "tools": [{"type": "function", "name": "lookup", "description": "find"}],
        },
    }
    assert natives(translate_client_event(state, create)) == [
        native.ResponseCreate(
            type="response.create",
            id="r9",
            max_output_tokens=20,
            instructions="Answer in French.",
            tools=[native.ToolSpec(name="lookup", description="find")],
            audio_output=False,
        )
    ]
    created = {"type": "response.created", "seq": 1, "response_id": "resp_1", "request_id": "r9"}
    (event,) = translate_event(state, created)
    assert event["response"]["output_modalities"] == ["text"]
    assert event["response"]["max_output_tokens"] == 20
    # Text, not an audio transcript: the response's modality, not the session's.
    delta = {"type": "response.text.delta", "seq": 2, "response_id": "resp_1", "delta": "Oui"}
    kinds = [out["type"] for out in translate_event(state, delta)]
    assert kinds[-1] == "response.output_text.delta"
    audio = {"type": "response.audio.delta", "seq": 3, "response_id": "resp_1", "audio": b"\0\0"}
    assert translate_event(state, audio) == []
    assert state.pending == {}


def test_a_refused_response_create_error_names_the_clients_event_id() -> None:
    state = voice_state()
    translate_client_event(state, {"type": "response.create", "event_id": "r5"})
    refused = {
        "type": "error",
        "seq": 1,
        "code": "nothing_to_answer",
        "message": "add a user turn",
        "request_id": "r5",
    }
    (error,) = translate_event(state, refused)
    assert (error["error"]["code"], error["error"]["event_id"]) == ("nothing_to_answer", "r5")
    assert state.pending == {}


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
        replies.extend(translate_client_event(state, event).replies)
    replies.append(rate_limits_updated(state, RATE_LIMITS))
    replies.append(rate_limits_updated(state, []))
    lines = (GOLDEN / "client_replies.jsonl").read_text(encoding="utf-8").splitlines()
    assert replies == [json.loads(line) for line in lines]


def test_native_request_ids_are_the_clients_or_unique_in_the_session() -> None:
    state = voice_state()
    ids = []
    for event_id in ("a", "a", None):
        event: dict[str, Any] = {"type": "response.create"}
        if event_id is not None:
            event["event_id"] = event_id
        ids.extend(message.id for message in natives(translate_client_event(state, event)))
    # A second "a" while the first is pending gets an id of the dialect's.
    assert ids == ["a", "rt_1", "rt_2"]
    resumed = voice_state()
    resumed.connection_tag = "beef_"
    (create,) = natives(translate_client_event(resumed, {"type": "response.create"}))
    # A resumed connection's ids never repeat an earlier connection's (the core refuses
    # a request id it has seen).
    assert create.id == "rt_beef_1"


def test_a_tool_round_ends_its_response_and_the_next_create_answers() -> None:
    state = voice_state()
    events = [out for message in TOOL_CALL[:6] for out in translate_event(state, message)]
    done = events[-1]
    assert done["type"] == "response.done"
    assert done["response"]["status"] == "completed"
    assert done["response"]["status_details"] is None
    (call,) = [item for item in done["response"]["output"] if item["type"] == "function_call"]
    assert (call["call_id"], call["name"], call["arguments"]) == (
        "call_1",
        "set_light",
        '{"on":true}',
    )
    assert done["response"]["usage"]["output_tokens"] == 3
    assert state.responses == {}
    output = {
        "type": "conversation.item.create",
        "item": {"type": "function_call_output", "call_id": "call_1", "output": "{}"},
    }
    # The output alone starts nothing (as in the Realtime API): one tool.result.
    assert natives(translate_client_event(state, output)) == [
        native.ToolResult(type="tool.result", call_id="call_1", output={})
    ]
    assert natives(translate_client_event(state, {"type": "response.create"})) == [
        native.ResponseCreate(type="response.create", id="rt_1")
    ]

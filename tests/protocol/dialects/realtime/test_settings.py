"""Golden tests: the settings of ``session.update`` and ``response.create`` as native
messages, applied when the core answers; client tool rounds (no event loop)."""

from __future__ import annotations

from typing import Any

from protocol import messages as native
from protocol.dialects.realtime.client_events import Translation, translate_client_event
from protocol.dialects.realtime.server_events import translate_event
from protocol.dialects.realtime.session_config import SessionConfig, with_native_settings
from tests.protocol.dialects.realtime.scenarios import TOOL_CALL, voice_state


def natives(translation: Translation) -> list[Any]:
    return list(translation.native)


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
            id="rt_1",
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
        "request_id": "rt_1",
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
            id="rt_1",
            max_output_tokens=20,
            instructions="Answer in French.",
            tools=[native.ToolSpec(name="lookup", description="find")],
            audio_output=False,
        )
    ]
    created = {"type": "response.created", "seq": 1, "response_id": "resp_1", "request_id": "rt_1"}
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
        "request_id": "rt_1",
    }
    (error,) = translate_event(state, refused)
    assert (error["error"]["code"], error["error"]["event_id"]) == ("nothing_to_answer", "r5")
    assert state.pending == {}


def test_native_request_ids_are_the_dialects_and_unique_in_the_session() -> None:
    state = voice_state()
    ids = []
    for event_id in ("a", "a", None):
        event: dict[str, Any] = {"type": "response.create"}
        if event_id is not None:
            event["event_id"] = event_id
        ids.extend(message.id for message in natives(translate_client_event(state, event)))
    # Never the client's event_id (a label it may use again): the dialect's own.
    assert ids == ["rt_1", "rt_2", "rt_3"]
    resumed = voice_state()
    resumed.connection_tag = "beef"
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
        native.ToolResult(type="tool.result", id="rt_1", call_id="call_1", output={})
    ]
    assert natives(translate_client_event(state, {"type": "response.create"})) == [
        native.ResponseCreate(type="response.create", id="rt_2")
    ]


def test_an_error_for_a_request_sent_with_the_dialects_id_names_the_clients() -> None:
    state = voice_state()
    for _ in range(2):
        translate_client_event(state, {"type": "response.create", "event_id": "a"})
    refused = {
        "type": "error",
        "seq": 1,
        "code": "response_in_progress",
        "message": "a response is running",
        "request_id": "rt_2",  # the second "a", sent with an id of the dialect's
    }
    (error,) = translate_event(state, refused)
    assert error["error"]["event_id"] == "a"
    assert list(state.pending) == ["rt_1"]


def test_settings_whose_tools_are_no_tools_keep_the_readable_ones() -> None:
    # A damaged stored session.updated: each entry that is no tool is left out, the
    # rest of its settings (and the tools that read) still hold.
    weather = native.ToolSpec(name="get_weather")
    config = SessionConfig("sess_1", "m", tools=(weather,))
    settings = {
        "instructions": "be brief",
        "tools": [5, {}, {"name": 1}, "not a name!", "get_weather"],
    }
    updated = with_native_settings(config, settings)
    assert updated.tools == (weather,)
    assert updated.instructions == "be brief"

"""Native event sequences for the golden tests of the Realtime translation."""

from __future__ import annotations

from typing import Any

from protocol.dialects.realtime.session_config import SessionConfig
from protocol.dialects.realtime.state import DialectState
from protocol.messages import ToolSpec

USAGE = {"input_tokens": 12, "output_tokens_generated": 3, "output_tokens_delivered": 3}


def text_state() -> DialectState:
    """A text-only session, as ``session.update`` with ``output_modalities: ["text"]`` sets it."""
    return DialectState(SessionConfig("sess_A", "gpt-realtime", output_modalities=("text",)))


def voice_state() -> DialectState:
    """A voice session (audio out, server VAD) with one tool."""
    tool = ToolSpec(name="set_light", parameters={"type": "object"})
    return DialectState(SessionConfig("sess_B", "gpt-realtime", tools=(tool,)))


def numbered(*events: dict[str, Any]) -> list[dict[str, Any]]:
    """Native wire events numbered 1, 2, 3, …"""
    return [{"seq": seq, **event} for seq, event in enumerate(events, start=1)]


TEXT_TURN = numbered(
    {"type": "response.created", "response_id": "resp_1", "request_id": "c1"},
    {"type": "response.text.delta", "response_id": "resp_1", "delta": "Hel"},
    {"type": "response.text.delta", "response_id": "resp_1", "delta": "lo"},
    {"type": "response.done", "response_id": "resp_1", "status": "completed", "usage": USAGE},
)

SPOKEN_TURN_BARGED_IN = numbered(
    {"type": "input_audio.speech_started", "audio_start_ms": 300},
    {"type": "input_audio.speech_stopped", "audio_end_ms": 1980, "speech_ms": 1680},
    {
        "type": "input_audio.committed",
        "audio_start_ms": 0,
        "audio_end_ms": 2480,
        "duration_ms": 2480,
    },
    {"type": "response.created", "response_id": "resp_1"},
    {"type": "input_audio.transcript", "response_id": "resp_1", "text": "Turn on", "final": False},
    {
        "type": "input_audio.transcript",
        "response_id": "resp_1",
        "text": "Turn on the light.",
        "final": True,
    },
    {"type": "response.text.delta", "response_id": "resp_1", "delta": "Sure"},
    {
        "type": "response.audio.delta",
        "response_id": "resp_1",
        "stream_id": 1,
        "audio": b"\x01\x00\x02\x00",
        "duration_ms": 0.08,
    },
    {"type": "input_audio.speech_started", "audio_start_ms": 4000},
    {
        "type": "response.done",
        "response_id": "resp_1",
        "status": "interrupted",
        "reason": "speech",
        "played_ms": 40,
        "usage": USAGE,
        "audio_ms": 0,
    },
)

TOOL_CALL = numbered(
    {"type": "response.created", "response_id": "resp_1"},
    {"type": "response.text.delta", "response_id": "resp_1", "delta": "One moment."},
    {
        "type": "response.tool_call.delta",
        "response_id": "resp_1",
        "call_id": "call_1",
        "name": "set_light",
        "delta": '{"on":',
        "arguments": {},
        "provisional": True,
    },
    {
        "type": "response.tool_call.delta",
        "response_id": "resp_1",
        "call_id": "call_1",
        "name": "set_light",
        "delta": "true}",
        "arguments": {"on": True},
        "provisional": True,
    },
    {
        "type": "response.tool_call",
        "response_id": "resp_1",
        "call_id": "call_1",
        "name": "set_light",
        "arguments": {"on": True},
    },
    {
        "type": "response.done",
        "response_id": "resp_1",
        "status": "completed",
        "reason": "tool_calls",
        "tool_calls": [{"call_id": "call_1", "name": "set_light"}],
        "usage": USAGE,
    },
    {"type": "tool.result.accepted", "call_id": "call_1", "duplicate": False},
    {"type": "response.created", "response_id": "resp_2", "request_id": "rt_1"},
    {"type": "response.text.delta", "response_id": "resp_2", "delta": "Done."},
    {"type": "response.done", "response_id": "resp_2", "status": "completed", "usage": USAGE},
)
"""A client tool round (the sessions' mode): the response that calls ends, the
client's ``response.create`` after the output starts the answer."""

FAILURES = numbered(
    {
        "type": "error",
        "code": "nothing_to_answer",
        "message": "add a user turn",
        "request_id": "c0",
    },
    {"type": "response.created", "response_id": "resp_2"},
    {
        "type": "response.done",
        "response_id": "resp_2",
        "status": "failed",
        "reason": "engine_overloaded",
        "usage": USAGE,
    },
    {"type": "response.created", "response_id": "resp_3"},
    {"type": "response.text.delta", "response_id": "resp_3", "delta": "a"},
    {
        "type": "response.done",
        "response_id": "resp_3",
        "status": "incomplete",
        "reason": "max_output_tokens",
        "usage": USAGE,
    },
    {"type": "error", "code": "internal_error", "message": "could not handle response.create"},
)


def _spoken_turn(response_id: str, said: str, answer: str) -> list[dict[str, Any]]:
    return [
        {"type": "input_audio.speech_started", "audio_start_ms": 300},
        {"type": "input_audio.speech_stopped", "audio_end_ms": 1500, "speech_ms": 1200},
        {"type": "input_audio.committed", "audio_start_ms": 0, "audio_end_ms": 2000},
        {"type": "input_audio.transcript", "text": said, "final": True},
        {"type": "response.created", "response_id": response_id},
        {"type": "response.text.delta", "response_id": response_id, "delta": answer},
        {"type": "response.done", "response_id": response_id, "status": "completed"},
    ]


TWO_SPOKEN_TURNS = numbered(
    *_spoken_turn("resp_1", "Hello.", "Hi!"), *_spoken_turn("resp_2", "Bye.", "Bye!")
)
"""Two voice turns: a quiet point between them, and user items the server names."""

NO_TRANSCRIPTS = [event for event in TWO_SPOKEN_TURNS if event["type"] != "input_audio.transcript"]
"""The same without speech-to-text: no transcript ever ends the wait for one."""

SCENARIOS = {
    "text_turn": (text_state, TEXT_TURN),
    "spoken_turn_barged_in": (voice_state, SPOKEN_TURN_BARGED_IN),
    "tool_call": (voice_state, TOOL_CALL),
    "failures": (text_state, FAILURES),
    "two_spoken_turns": (voice_state, TWO_SPOKEN_TURNS),
    "spoken_turns_without_transcripts": (voice_state, NO_TRANSCRIPTS),
}


CLIENT_EVENTS: list[Any] = [
    {
        "type": "session.update",
        "session": {"instructions": "Be brief.", "output_modalities": ["text"]},
    },
    {
        "type": "conversation.item.create",
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Hi"}],
        },
    },
    {
        "type": "conversation.item.create",
        "item": {"type": "function_call_output", "call_id": "call_1", "output": "{}"},
    },
    {"type": "conversation.item.retrieve", "item_id": "item_user_c1"},
    {"type": "nope", "event_id": "e1"},
]
"""Client events the dialect answers itself (after ``session.created``)."""

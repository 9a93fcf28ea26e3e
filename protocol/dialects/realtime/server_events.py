"""Native session events → complete Realtime server events.

:func:`translate_event` takes one native event in its wire form (``type``, ``seq``
and fields, as :meth:`protocol.events.Event.to_message` gives and the store replays;
a ``response.audio.delta`` carries its PCM16 as ``audio`` bytes) and returns the
Realtime events it becomes, each with an ``event_id`` derived from that ``seq``.
Native events with no Realtime counterpart become none.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from protocol.dialects.realtime.connection_events import (
    conversation_created,
    rate_limits_updated,
    session_created,
)
from protocol.dialects.realtime.errors import INVALID_REQUEST, SERVER_ERROR, error_event
from protocol.dialects.realtime.event_ids import session_event_id
from protocol.dialects.realtime.objects import (
    arguments_text,
    realtime_status,
    response_object,
    status_details,
    usage_object,
    user_audio_item,
)
from protocol.dialects.realtime.session_config import session_object
from protocol.dialects.realtime.session_update import settle_update
from protocol.dialects.realtime.state import DialectState, OutputItem, ResponseState
from protocol.dialects.realtime.stream_items import (
    close_message,
    ensure_message,
    finish_item,
    open_call,
)

__all__ = ["conversation_created", "rate_limits_updated", "session_created", "translate_event"]

RealtimeEvent = dict[str, Any]
Translator = Callable[[DialectState, dict[str, Any]], list[RealtimeEvent]]


def translate_event(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    """The Realtime events native session event ``message`` becomes, ids assigned."""
    seq = message.get("seq")
    translator = _TRANSLATORS.get(message.get("type"))  # type: ignore[arg-type]
    if type(seq) is not int or seq < 1 or translator is None:
        return []
    numbered = []
    for index, event in enumerate(translator(state, message)):
        event_id = session_event_id(seq, index)
        # type and event_id first, for readers of the raw frames; the id always ours.
        out: RealtimeEvent = {"type": event["type"], "event_id": event_id}
        out.update(event)
        out["event_id"] = event_id
        numbered.append(out)
    return numbered


def _response(state: DialectState, message: dict[str, Any]) -> ResponseState | None:
    response_id = message.get("response_id")
    return state.responses.get(response_id) if isinstance(response_id, str) else None


def _response_created(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    response_id = message.get("response_id")
    if not isinstance(response_id, str):
        return []
    request = state.answered(message.get("request_id"))
    created = ResponseState(response_id)
    if request is not None:
        created.output_modalities = request.output_modalities
        created.max_output_tokens = request.max_output_tokens
    state.responses[response_id] = created
    response = _response_object(state, created, "in_progress", None, [], None)
    return [{"type": "response.created", "response": response}]


def _response_object(
    state: DialectState,
    response: ResponseState,
    status: str,
    details: dict[str, Any] | None,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    return response_object(
        state.config,
        response.response_id,
        status,
        details,
        output,
        usage,
        modalities=response.output_modalities,
        max_output_tokens=response.max_output_tokens,
    )


def _session_updated(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    settle_update(state, message)
    if state.config.turn_detection is None:
        # Manual turns: the core detects no more speech, so none is in progress (a
        # speech it had started would never end, and no point would be quiet again).
        state.pending_user_item = None
        state.speaking = state.speech_cleared = False
    return [{"type": "session.updated", "session": session_object(state.config)}]


def _text_delta(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    response = _response(state, message)
    delta = message.get("delta")
    if response is None or not isinstance(delta, str):
        return []
    events, item = ensure_message(state, response)
    item.text.append(delta)
    kind = "response.output_audio_transcript.delta" if item.audio else "response.output_text.delta"
    events.append(_content_event(kind, response, item) | {"delta": delta})
    return events


def _audio_delta(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    response = _response(state, message)
    audio = message.get("audio")
    if response is None or not isinstance(audio, bytes | bytearray):
        return []
    speaks = response.audio
    if not (state.config.audio_output if speaks is None else speaks):
        # The core makes none for a response that does not speak; one that began
        # speaking before the session turned text-only is not shown it either.
        return []
    events, item = ensure_message(state, response)
    item.audio_started = True
    delta = base64.b64encode(audio).decode("ascii")
    events.append(_content_event("response.output_audio.delta", response, item) | {"delta": delta})
    return events


def _tool_call_delta(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    response = _response(state, message)
    call_id, name, delta = message.get("call_id"), message.get("name"), message.get("delta")
    if response is None or not isinstance(call_id, str) or not isinstance(delta, str):
        return []
    events: list[RealtimeEvent] = []
    item = response.calls.get(call_id)
    if item is None:
        events, item = open_call(state, response, call_id, name if isinstance(name, str) else "")
    item.arguments.append(delta)
    events.append(
        {
            "type": "response.function_call_arguments.delta",
            "response_id": response.response_id,
            "item_id": item.item_id,
            "output_index": item.output_index,
            "call_id": call_id,
            "delta": delta,
        }
    )
    return events


def _tool_call(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    response = _response(state, message)
    call_id, name = message.get("call_id"), message.get("name")
    if response is None or not isinstance(call_id, str) or not isinstance(name, str):
        return []
    events: list[RealtimeEvent] = []
    item = response.calls.get(call_id)
    if item is None:
        events, item = open_call(state, response, call_id, name)
    text = arguments_text(item, message.get("arguments"))
    item.arguments = [text]
    events.append(
        {
            "type": "response.function_call_arguments.done",
            "response_id": response.response_id,
            "item_id": item.item_id,
            "output_index": item.output_index,
            "call_id": call_id,
            "name": name,
            "arguments": text,
        }
    )
    events.extend(finish_item(state, response, item, "completed"))
    return events


def _tool_call_rejected(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    response = _response(state, message)
    call_id = message.get("call_id")
    item = response.calls.get(call_id) if response and isinstance(call_id, str) else None
    if response is None or item is None or not item.open:
        return []
    return finish_item(state, response, item, "incomplete")


def _response_done(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    response = _response(state, message)
    if response is None:
        return []
    state.transcript_answered = state.transcript_item is not None
    status = message.get("status")
    item_status = "completed" if status == "completed" else "incomplete"
    events: list[RealtimeEvent] = []
    if response.message is not None:
        events.extend(close_message(state, response, item_status))
    for item in response.outputs:
        if item.open:
            events.extend(finish_item(state, response, item, item_status))
    output = [state.items[i.item_id][0] for i in response.outputs if i.item_id in state.items]
    details = status_details(str(status), message.get("reason"), message.get("error"))
    obj = _response_object(
        state,
        response,
        realtime_status(status),
        details,
        output,
        usage_object(message.get("usage")),
    )
    del state.responses[response.response_id]
    events.append({"type": "response.done", "response": obj})
    return events


def user_item_id(message: dict[str, Any]) -> str:
    """The id of the user item native event ``message`` names first: derived from its
    ``seq``, so a translation rebuilt from any quiet point names it the same."""
    return f"item_user_{message.get('seq')}"


def _speech_started(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    state.pending_user_item = user_item_id(message)
    state.speaking, state.speech_cleared = True, False
    return [
        {
            "type": "input_audio_buffer.speech_started",
            "audio_start_ms": _ms(message.get("audio_start_ms")),
            "item_id": state.pending_user_item,
        }
    ]


def _speech_stopped(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    if state.pending_user_item is None and not state.speech_cleared:
        state.pending_user_item = user_item_id(message)
    # After a clear the item named is none to come: nothing awaits a commit, and the
    # stream can be quiet again (else no quiet point would come, nor any native ack).
    item_id = state.pending_user_item or user_item_id(message)
    state.speaking = state.speech_cleared = False
    return [
        {
            "type": "input_audio_buffer.speech_stopped",
            "audio_end_ms": _ms(message.get("audio_end_ms")),
            "item_id": item_id,
        }
    ]


def _committed(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    item_id = state.pending_user_item or user_item_id(message)
    state.pending_user_item = None
    state.transcript_item, state.transcript_text = item_id, ""
    state.transcript_answered = False
    state.transcript_seconds = _ms(message.get("duration_ms")) / 1000
    item = user_audio_item(item_id, None)
    previous = state.remember(item)
    return [
        {"type": "input_audio_buffer.committed", "item_id": item_id, "previous_item_id": previous},
        {"type": "conversation.item.added", "previous_item_id": previous, "item": item},
        {"type": "conversation.item.done", "previous_item_id": previous, "item": item},
    ]


def _discarded(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    # Realtime has no event for speech too short to be a turn: the item named at
    # speech_started is simply never committed.
    state.pending_user_item = None
    return []


def _cleared(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    state.pending_user_item = None
    state.speech_cleared = state.speaking
    return [{"type": "input_audio_buffer.cleared"}]


def _transcript(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    text, item_id = message.get("text"), state.transcript_item
    if not isinstance(text, str) or item_id is None:
        return []
    if message.get("final") is not True:
        # Native partials are the whole text so far; Realtime sends what was added.
        known = state.transcript_text
        delta = text[len(known) :] if text.startswith(known) else text
        state.transcript_text = text
        return [
            {
                "type": "conversation.item.input_audio_transcription.delta",
                "item_id": item_id,
                "content_index": 0,
                "delta": delta,
                "logprobs": None,
            }
        ]
    state.transcript_item = None
    if item_id in state.items:
        state.remember(user_audio_item(item_id, text))
    return [
        {
            "type": "conversation.item.input_audio_transcription.completed",
            "item_id": item_id,
            "content_index": 0,
            "transcript": text,
            "logprobs": None,
            "languages": None,
            "usage": {"type": "duration", "seconds": state.transcript_seconds},
        }
    ]


def _error(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    code = message.get("code")
    request_id = message.get("request_id")
    request = state.answered(request_id)
    if request is not None:
        # The core refused a request the dialect sent with its own id.
        request_id = request.client_event_id
        if request.patch is not None:
            settle_update(state, None)
        if request.call_id is not None:
            state.pending_outputs.pop(request.call_id, None)
    event = error_event(
        "",
        error_type=SERVER_ERROR if code == "internal_error" else INVALID_REQUEST,
        code=code if isinstance(code, str) else None,
        message=str(message.get("message", "")),
        client_event_id=request_id if isinstance(request_id, str) else None,
    )
    return [event]


def _result_accepted(state: DialectState, message: dict[str, Any]) -> list[RealtimeEvent]:
    # The client's function_call_output is in the conversation now: its item is
    # reported (connection events, as for every item a client creates; not replayed).
    call_id = message.get("call_id")
    native_id = state.pending_outputs.pop(call_id, None) if isinstance(call_id, str) else None
    request = state.answered(native_id)
    if request is not None and request.output_item is not None and not message.get("duplicate"):
        previous = state.remember(request.output_item)
        state.ready_replies.extend(
            {"type": kind, "previous_item_id": previous, "item": request.output_item}
            for kind in ("conversation.item.added", "conversation.item.done")
        )
    return []


def _content_event(kind: str, response: ResponseState, item: OutputItem) -> RealtimeEvent:
    return {
        "type": kind,
        "response_id": response.response_id,
        "item_id": item.item_id,
        "output_index": item.output_index,
        "content_index": 0,
    }


def _ms(value: Any) -> int:
    return int(value) if type(value) in (int, float) and value >= 0 else 0


_TRANSLATORS: dict[str, Translator] = {
    "response.created": _response_created,
    "response.text.delta": _text_delta,
    "response.audio.delta": _audio_delta,
    "response.tool_call.delta": _tool_call_delta,
    "response.tool_call": _tool_call,
    "response.tool_call.rejected": _tool_call_rejected,
    "response.done": _response_done,
    "session.updated": _session_updated,
    "input_audio.speech_started": _speech_started,
    "input_audio.speech_stopped": _speech_stopped,
    "input_audio.committed": _committed,
    "input_audio.discarded": _discarded,
    "input_audio.cleared": _cleared,
    "input_audio.transcript": _transcript,
    "error": _error,
    "tool.result.accepted": _result_accepted,
}
"""Every native session event with a Realtime counterpart (``tool.result.accepted``
makes the dialect's own answer to a ``function_call_output`` ready, and
``response.tool_call.closed`` has none)."""

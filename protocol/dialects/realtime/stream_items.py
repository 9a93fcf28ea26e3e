"""Opening and closing a response's output items as its native deltas stream.

A native response is one stream of text, audio and tool-call deltas; Realtime
splits it into output items (an assistant message with one content part, or a
function call), each announced before its first delta and finished with its own
``done`` events. A call starting closes the message before it, and text after a
call opens a new message.
"""

from __future__ import annotations

from typing import Any

from protocol.dialects.realtime.objects import output_item_object, part_object
from protocol.dialects.realtime.state import DialectState, OutputItem, ResponseState

RealtimeEvent = dict[str, Any]


def ensure_message(
    state: DialectState, response: ResponseState
) -> tuple[list[RealtimeEvent], OutputItem]:
    """The open message item, and the events that opened it if it is new."""
    if response.message is not None:
        return [], response.message
    item = response.new_item("message")
    speaks = response.audio
    item.audio = state.config.audio_output if speaks is None else speaks
    response.message = item
    events = _added(state, response, item)
    events.append(
        {
            "type": "response.content_part.added",
            "response_id": response.response_id,
            "item_id": item.item_id,
            "output_index": item.output_index,
            "content_index": 0,
            "part": part_object(item),
        }
    )
    return events, item


def open_call(
    state: DialectState, response: ResponseState, call_id: str, name: str
) -> tuple[list[RealtimeEvent], OutputItem]:
    """Open a function call item (closing the message before it)."""
    events = close_message(state, response, "completed") if response.message else []
    item = response.new_item("function_call")
    item.call_id, item.name = call_id, name
    response.calls[call_id] = item
    events.extend(_added(state, response, item))
    return events, item


def close_message(state: DialectState, response: ResponseState, status: str) -> list[RealtimeEvent]:
    """Finish the open message item: its text/transcript, audio, part and item."""
    item = response.message
    if item is None:
        return []
    response.message = None
    text = "".join(item.text)
    base = {
        "response_id": response.response_id,
        "item_id": item.item_id,
        "output_index": item.output_index,
        "content_index": 0,
    }
    events: list[RealtimeEvent] = []
    if item.audio:
        events.append(base | {"type": "response.output_audio.done"})
        events.append(base | {"type": "response.output_audio_transcript.done", "transcript": text})
    else:
        events.append(base | {"type": "response.output_text.done", "text": text})
    events.append(base | {"type": "response.content_part.done", "part": part_object(item)})
    events.extend(finish_item(state, response, item, status))
    return events


def finish_item(
    state: DialectState, response: ResponseState, item: OutputItem, status: str
) -> list[RealtimeEvent]:
    """``response.output_item.done`` and ``conversation.item.done`` of ``item``."""
    item.open = False
    return _item_events(state, response, item, status, "done")


def _added(state: DialectState, response: ResponseState, item: OutputItem) -> list[RealtimeEvent]:
    return _item_events(state, response, item, "in_progress", "added")


def _item_events(
    state: DialectState, response: ResponseState, item: OutputItem, status: str, kind: str
) -> list[RealtimeEvent]:
    """``response.output_item.<kind>`` and ``conversation.item.<kind>`` of ``item``."""
    obj = output_item_object(item, status)
    previous = state.remember(obj, response.response_id)
    return [
        {
            "type": f"response.output_item.{kind}",
            "response_id": response.response_id,
            "output_index": item.output_index,
            "item": obj,
        },
        {"type": f"conversation.item.{kind}", "previous_item_id": previous, "item": obj},
    ]

"""Realtime client events → native client messages, input audio and dialect answers.

:func:`translate_client_event` validates one decoded Realtime client event and
returns a :class:`Translation`: the native inputs to hand the session (messages of
:mod:`protocol.messages`, raw :class:`InputAudio`) and the Realtime events the
dialect answers itself (``conversation.item.added`` / ``done`` for an item the
client created, an ``error``).
Bad or unsupported input is always an ``error`` answer, never an exception.
``session.update`` and ``response.create`` go to the core with ids of the dialect's
own (:meth:`DialectState.send_request`): the core's answer (``session.updated``,
``response.created`` or an ``error``) finds what the translation kept for it.
"""

from __future__ import annotations

import binascii
import json
import re
from base64 import b64decode
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from protocol import messages as native
from protocol.dialects.realtime import client_models as rt
from protocol.dialects.realtime.errors import DialectError, client_event_id, error_event
from protocol.dialects.realtime.objects import function_call_output_item, user_text_item
from protocol.dialects.realtime.session_config import native_audio
from protocol.dialects.realtime.session_update import kept_patch, session_tools, session_update
from protocol.dialects.realtime.state import (
    MAX_PENDING_UPDATE_CHARS,
    MAX_PENDING_UPDATES,
    DialectState,
    PendingRequest,
    text_chars,
)
from protocol.json_value import NotJsonData, check_json_data, safe_text
from protocol.session.inputs import SessionMessage


@dataclass(frozen=True, slots=True)
class InputAudio:
    """PCM16 mono at 24 kHz to append to the session's input audio."""

    pcm: bytes


NativeInput = SessionMessage | InputAudio


@dataclass(frozen=True, slots=True)
class Translation:
    """What one Realtime client event becomes."""

    native: tuple[NativeInput, ...] = ()
    replies: list[dict[str, Any]] = field(default_factory=list)


_SERVER_ITEM_PREFIXES = ("item_resp_", "item_user_")
"""Prefixes of the item ids the dialect makes (assistant items, user items)."""
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_adapter: TypeAdapter[rt.ClientEvent] = TypeAdapter(rt.ClientEvent)


def translate_client_event(state: DialectState, obj: Any) -> Translation:
    """Translate one decoded client event; every failure is an ``error`` reply."""
    event_id = client_event_id(obj.get("event_id")) if isinstance(obj, dict) else None
    try:
        event = _parse(obj)
        translation: Translation = _HANDLERS[type(event)](state, event, event_id)
        return translation
    except DialectError as exc:
        reply = error_event(
            state.next_connection_event_id(),
            error_type=exc.error_type,
            code=exc.code,
            message=exc.message,
            param=exc.param,
            client_event_id=event_id,
        )
        return Translation(replies=[reply])


def _parse(obj: Any) -> Any:
    if not isinstance(obj, dict):
        raise DialectError("invalid_event", "an event must be a json object")
    kind = obj.get("type")
    if kind is None:
        raise DialectError("missing_required_parameter", "missing field 'type'", param="type")
    if type(kind) is not str or kind not in rt.CLIENT_EVENT_TYPES:
        shown = safe_text(kind) if type(kind) is str else type(kind).__name__
        raise DialectError("unknown_event", f"unsupported event type {shown!r}", param="type")
    try:
        check_json_data(obj)
    except NotJsonData as exc:
        raise DialectError("invalid_value", f"invalid '{exc.where}': {exc.reason}") from None
    try:
        return _adapter.validate_python(obj)
    except ValidationError as exc:
        raise _from_validation(exc) from None


def _from_validation(exc: ValidationError) -> DialectError:
    first = exc.errors(include_url=False, include_input=False)[0]
    # loc is (event tag, field, ...); a union adds its member's tag ("constrained-int"),
    # which is no parameter a client wrote.
    path = [str(p) for p in first["loc"][1:] if type(p) is int or _FIELD_NAME.fullmatch(str(p))]
    param = ".".join(safe_text(p, 40) for p in path) or None
    if first["type"] == "missing":
        return DialectError("missing_required_parameter", f"missing '{param}'", param=param)
    if first["type"] == "extra_forbidden":
        return DialectError("unknown_parameter", f"unknown parameter '{param}'", param=param)
    return DialectError("invalid_value", f"invalid '{param}': {first['msg'].lower()}", param=param)


def _session_update(state: DialectState, event: rt.SessionUpdate, eid: str | None) -> Translation:
    # Checked against the settings with every pending update applied; applied to the
    # dialect's view only when the core accepts it (its session.updated is the answer).
    requested, tools = session_update(state.view, event.session)
    patch = event.session
    audio_in = patch.audio.input if patch.audio is not None else None
    audio_changed = patch.output_modalities is not None or (
        audio_in is not None and "turn_detection" in audio_in.model_fields_set
    )
    size = len(patch.instructions or "") + sum(
        len(tool.description) + text_chars(tool.parameters) for tool in patch.tools or ()
    )
    if state.pending_update_chars + size > MAX_PENDING_UPDATE_CHARS:
        raise DialectError(
            "too_many_pending_updates",
            "session.update events awaiting their session.updated hold too much: read them",
        )
    if state.pending_updates >= MAX_PENDING_UPDATES:
        raise DialectError(
            "too_many_pending_updates",
            f"{MAX_PENDING_UPDATES} session.update events await their session.updated: read them",
        )
    native_id = state.send_request(PendingRequest(eid, patch=kept_patch(patch), size=size))
    state.requested = requested
    update = native.SessionUpdate(
        type="session.update",
        id=native_id,
        tools=tools,
        instructions=patch.instructions,
        audio=native_audio(requested) if audio_changed else None,
        # Always given: every update is one native round trip, answered in order.
        tool_rounds="client",
    )
    return Translation((update,))


def _item_create(state: DialectState, event: rt.ItemCreate, eid: str | None) -> Translation:
    item = event.item
    if item.id is not None and item.id in state.items:
        raise DialectError("invalid_value", f"item {item.id!r} already exists", param="item.id")
    if item.id is not None and item.id.startswith(_SERVER_ITEM_PREFIXES):
        # The dialect names items so: a client's would collide with one made later.
        raise DialectError(
            "invalid_value",
            "ids starting with item_resp_ or item_user_ are the server's",
            param="item.id",
        )
    item_id = item.id or state.next_user_item_id()
    if item.type == "function_call_output":
        if item.call_id is None or item.output is None:
            missing = "item.call_id" if item.call_id is None else "item.output"
            raise DialectError("missing_required_parameter", f"missing '{missing}'", param=missing)
        obj = function_call_output_item(item_id, item.call_id, item.output)
        # Reported added once the ledger applied it (tool.result.accepted): an output
        # for no such call gets the error alone.
        pending = PendingRequest(eid, output_item=obj, call_id=item.call_id)
        native_id = state.send_output(pending)
        result = native.ToolResult(
            type="tool.result", id=native_id, call_id=item.call_id, output=_tool_output(item.output)
        )
        return Translation((result,))
    if item.type != "message" or item.role != "user":
        kind = item.type if item.type != "message" else f"{item.role} message"
        raise DialectError(
            "unsupported_item", f"creating a {kind} item is not supported", param="item.type"
        )
    text = _user_text(item)
    if len(text) > state.max_input_chars:
        # The core's own bound, checked here so that a refused item is never reported.
        raise DialectError(
            "input_too_long",
            f"input has {len(text)} characters, the limit is {state.max_input_chars}",
            param="item.content",
        )
    native_id = state.send_request(PendingRequest(eid))
    message = native.InputText(type="input.text", id=native_id, text=text)
    obj = user_text_item(item_id, text)
    return Translation((message,), item_replies(state, obj))


def item_replies(state: DialectState, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """``conversation.item.added`` and ``done`` for an item the client created."""
    previous = state.remember(obj)
    return [
        {"type": kind, "event_id": state.next_connection_event_id(), "previous_item_id": previous}
        | {"item": obj}
        for kind in ("conversation.item.added", "conversation.item.done")
    ]


def _user_text(item: rt.Item) -> str:
    parts = item.content or []
    if any(part.type != "input_text" for part in parts):
        raise DialectError(
            "unsupported_content",
            "a user item may hold only input_text (send audio with input_audio_buffer.append)",
            param="item.content",
        )
    text = "\n".join(part.text or "" for part in parts)
    if not text:
        raise DialectError("invalid_value", "a user item needs text", param="item.content")
    return text


def _tool_output(output: str) -> Any:
    # A tool's output is JSON text by convention; a plain string is sent as it is, and
    # so is JSON the native message could not carry: its bounds count from the message,
    # whose fields (type, id, call_id) are checked here as the message will hold them.
    try:
        value = json.loads(output)
        check_json_data({"type": "tool.result", "id": "", "call_id": "", "output": value})
    except (ValueError, NotJsonData, RecursionError):
        return output
    return value


def _truncate(state: DialectState, event: rt.ItemTruncate, eid: str | None) -> Translation:
    response_id = state.item_responses.get(event.item_id)
    if response_id is None:
        raise DialectError("invalid_value", "no assistant item with that id", param="item_id")
    if event.content_index != 0:
        raise DialectError("invalid_value", "an item has one content part", param="content_index")
    played = native.OutputAudioPlayed(
        type="output_audio.played", id=eid, response_id=response_id, played_ms=event.audio_end_ms
    )
    reply = {
        "type": "conversation.item.truncated",
        "event_id": state.next_connection_event_id(),
        "item_id": event.item_id,
        "content_index": 0,
        "audio_end_ms": event.audio_end_ms,
    }
    return Translation((played,), [reply])


def _delete(state: DialectState, event: rt.ItemDelete, eid: str | None) -> Translation:
    raise DialectError("unsupported_event", "deleting items is not supported", param="type")


def _retrieve(state: DialectState, event: rt.ItemRetrieve, eid: str | None) -> Translation:
    known = state.items.get(event.item_id)
    if known is None:
        raise DialectError("invalid_value", "no recent item with that id", param="item_id")
    reply = {
        "type": "conversation.item.retrieved",
        "event_id": state.next_connection_event_id(),
        "item": known[0],
    }
    return Translation((), [reply])


def _append(state: DialectState, event: rt.AudioAppend, eid: str | None) -> Translation:
    # Checked before decoding: base64 text is 4/3 of the bytes it holds.
    if len(event.audio) > (state.max_append_bytes + 2) // 3 * 4:
        raise DialectError(
            "invalid_value", f"audio over {state.max_append_bytes} bytes", param="audio"
        )
    try:
        pcm = b64decode(event.audio, validate=True)
    except (binascii.Error, ValueError):
        raise DialectError("invalid_value", "audio is not valid base64", param="audio") from None
    if len(pcm) % 2:
        raise DialectError("invalid_value", "pcm16 audio has an even byte count", param="audio")
    return Translation((InputAudio(pcm),)) if pcm else Translation()


def _commit(state: DialectState, event: rt.AudioCommit, eid: str | None) -> Translation:
    return Translation((native.InputAudioCommit(type="input_audio.commit", id=eid),))


def _clear(state: DialectState, event: rt.AudioClear, eid: str | None) -> Translation:
    return Translation((native.InputAudioClear(type="input_audio.clear", id=eid),))


def _response_create(state: DialectState, event: rt.ResponseCreate, eid: str | None) -> Translation:
    params = event.response or rt.ResponseParams()
    if params.conversation not in (None, "auto") or params.input is not None:
        raise DialectError(
            "unsupported_value",
            "out-of-band responses (conversation 'none', input) are not supported",
            param="response.conversation" if params.input is None else "response.input",
        )
    if params.tool_choice not in (None, "auto"):
        raise DialectError(
            "unsupported_value",
            "only tool_choice 'auto' is supported",
            param="response.tool_choice",
        )
    tools = None if params.tools is None else session_tools(params.tools, "response.tools")
    modalities = None if params.output_modalities is None else tuple(params.output_modalities)
    limit = params.max_output_tokens
    if limit is None:
        limit = state.config.max_output_tokens
    request = PendingRequest(eid, output_modalities=modalities, max_output_tokens=limit)
    create = native.ResponseCreate(
        type="response.create",
        id=state.send_request(request),
        max_output_tokens=limit if isinstance(limit, int) else None,
        instructions=params.instructions,
        tools=tools,
        audio_output=None if modalities is None else "audio" in modalities,
    )
    return Translation((create,))


def _cancel(state: DialectState, event: rt.ResponseCancel, eid: str | None) -> Translation:
    cancel = native.ResponseCancel(type="response.cancel", id=eid, response_id=event.response_id)
    return Translation((cancel,))


def _output_clear(state: DialectState, event: rt.OutputAudioClear, eid: str | None) -> Translation:
    interrupt = native.ResponseInterrupt(type="response.interrupt", id=eid)
    replies = [
        {
            "type": "output_audio_buffer.cleared",
            "event_id": state.next_connection_event_id(),
            "response_id": response_id,
        }
        for response_id in state.responses
    ]
    return Translation((interrupt,), replies)


_HANDLERS: dict[type[Any], Any] = {
    rt.SessionUpdate: _session_update,
    rt.ItemCreate: _item_create,
    rt.ItemTruncate: _truncate,
    rt.ItemDelete: _delete,
    rt.ItemRetrieve: _retrieve,
    rt.AudioAppend: _append,
    rt.AudioCommit: _commit,
    rt.AudioClear: _clear,
    rt.ResponseCreate: _response_create,
    rt.ResponseCancel: _cancel,
    rt.OutputAudioClear: _output_clear,
}

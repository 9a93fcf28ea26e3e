"""Attacks on the Realtime translation, without an event loop: ids a client chooses
that collide with the ids the dialect makes, and floods of requests it does not read
the answers to."""

from __future__ import annotations

from typing import Any

from protocol.dialects.realtime.client_events import translate_client_event
from protocol.dialects.realtime.server_events import translate_event
from protocol.dialects.realtime.state import MAX_PENDING_REQUESTS, MAX_PENDING_UPDATES
from tests.protocol.dialects.realtime.scenarios import TEXT_TURN, text_state, voice_state


def user_item(item_id: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "hi"}],
    }
    if item_id is not None:
        item["id"] = item_id
    return {"type": "conversation.item.create", "item": item}


def test_an_item_id_the_dialect_makes_never_repeats_one_the_client_chose() -> None:
    """A client may name its items; the dialect names the others ``item_user_c<n>``.
    Two items of one conversation must never share an id (``retrieve``, ``truncate``
    and ``previous_item_id`` name items by id)."""
    state = voice_state()
    chosen = translate_client_event(state, user_item("item_user_c1")).replies
    made = translate_client_event(state, user_item()).replies
    assert made[0]["type"] == "conversation.item.added"
    # Refused, or given: either way no two items share the id.
    if chosen[0]["type"] == "conversation.item.added":
        assert made[0]["item"]["id"] != chosen[0]["item"]["id"]
    else:
        assert chosen[0]["error"]["param"] == "item.id"


def test_a_client_item_id_never_names_an_assistant_item_too() -> None:
    """Assistant items are named ``item_<response id>_<n>``; a client that names its
    own item ``item_resp_1_0`` first must not end with two items of that id (the
    assistant's would replace the client's in ``retrieve`` and be ``truncate``d as it)."""
    state = text_state()
    created = translate_client_event(state, user_item("item_resp_1_0")).replies
    ids = [created[0]["item"]["id"]] if created[0]["type"] == "conversation.item.added" else []
    for message in TEXT_TURN:
        for out in translate_event(state, message):
            if out["type"] == "conversation.item.added":
                ids.append(out["item"]["id"])
    assert len(ids) == len(set(ids)), ids


def voice_update(voice: str) -> dict[str, Any]:
    return {"type": "session.update", "session": {"audio": {"output": {"voice": voice}}}}


def updated(request_id: str) -> dict[str, Any]:
    """The core's answer to a ``session.update`` that changed nothing it holds."""
    return {
        "seq": 1,
        "type": "session.updated",
        "request_id": request_id,
        "instructions": "",
        "tools": [],
        "audio": None,
    }


def test_a_flood_of_requests_never_forgets_a_pending_update() -> None:
    """A client that stops reading sends an update, then more requests than are kept,
    then another update: each session.updated still shows its own update's settings."""
    state = text_state()
    first = translate_client_event(state, voice_update("A")).native[0]
    for _ in range(MAX_PENDING_REQUESTS):
        translate_client_event(state, {"type": "response.create"})
    second = translate_client_event(state, voice_update("B")).native[0]
    assert len(state.pending) == MAX_PENDING_REQUESTS
    answers = [translate_event(state, updated(str(m.id)))[0] for m in (first, second)]
    voices = [answer["session"]["audio"]["output"]["voice"] for answer in answers]
    assert voices == ["A", "B"]


def test_updates_past_the_pending_bound_are_refused_until_one_is_answered() -> None:
    state = text_state()
    sent = [
        translate_client_event(state, voice_update(f"v{n}")) for n in range(MAX_PENDING_UPDATES)
    ]
    assert all(out.native and not out.replies for out in sent)
    [refusal] = translate_client_event(state, voice_update("late")).replies
    assert refusal["error"]["code"] == "too_many_pending_updates"
    translate_event(state, updated(str(sent[0].native[0].id)))
    assert translate_client_event(state, voice_update("late")).native


def test_speech_cleared_before_it_stops_leaves_the_stream_able_to_be_quiet() -> None:
    """input_audio_buffer.clear while the client speaks: the speech's stop awaits no
    commit, so the next answer's end is a quiet point again (else the dialect would
    ack nothing natively for the rest of the session, and no resume could be served)."""
    for cleared_at in (2, 3):  # while speaking, or after the stop (awaiting the commit)
        state = voice_state()
        voice = [
            {"type": "input_audio.speech_started", "audio_start_ms": 200},
            {"type": "input_audio.speech_stopped", "audio_end_ms": 600, "speech_ms": 400},
        ]
        voice.insert(cleared_at - 1, {"type": "input_audio.cleared"})
        for seq, message in enumerate(voice, start=1):
            out = translate_event(state, {"seq": seq, **message})
        stopped = [e for e in out if e["type"] == "input_audio_buffer.speech_stopped"]
        assert all(e["item_id"].startswith("item_user_") for e in stopped)
        assert state.quiet, cleared_at
        turn = [{**event, "seq": event["seq"] + 3} for event in TEXT_TURN]
        for message in turn:
            translate_event(state, message)
        assert state.quiet, cleared_at

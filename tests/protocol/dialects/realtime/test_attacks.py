"""Attacks on the Realtime translation, without an event loop: ids a client chooses
that collide with the ids the dialect makes."""

from __future__ import annotations

from typing import Any

from protocol.dialects.realtime.client_events import translate_client_event
from tests.protocol.dialects.realtime.scenarios import voice_state


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
    assert chosen[0]["type"] == made[0]["type"] == "conversation.item.added"
    assert made[0]["item"]["id"] != chosen[0]["item"]["id"]

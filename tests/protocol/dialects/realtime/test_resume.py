"""Resume: a fresh state rebuilt from the native events gives exactly the missed events."""

from __future__ import annotations

import pytest

from protocol.dialects.realtime.event_ids import parse_event_id
from protocol.dialects.realtime.resume import resume_translation
from protocol.dialects.realtime.server_events import translate_event
from tests.protocol.dialects.realtime.scenarios import SCENARIOS


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_resuming_after_any_event_sends_exactly_the_rest(name: str) -> None:
    make, events = SCENARIOS[name]
    original = make()
    full = [out for message in events for out in translate_event(original, message)]
    for cut, last_seen in enumerate(full):
        position = parse_event_id(last_seen["event_id"])
        assert position is not None
        rebuilt = make()
        assert resume_translation(rebuilt, events, position) == full[cut + 1 :]
        assert rebuilt == original


def test_a_client_that_saw_nothing_gets_everything() -> None:
    make, events = SCENARIOS["text_turn"]
    state = make()
    full = [out for message in events for out in translate_event(state, message)]
    assert resume_translation(make(), events, None) == full


def test_a_position_past_the_end_sends_nothing() -> None:
    make, events = SCENARIOS["tool_call"]
    position = parse_event_id("event_99_0")
    assert resume_translation(make(), events, position) == []

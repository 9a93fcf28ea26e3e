"""Resume: a fresh state rebuilt from the native events gives exactly the missed events."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.dialects.realtime.event_ids import EventPosition, parse_event_id
from protocol.dialects.realtime.resume import (
    LAST_EVENT_HEADER,
    SESSION_HEADER,
    TOKEN_HEADER,
    ResumeRequest,
    ResumeRequestInvalid,
    check_replay,
    resume_request,
    resume_translation,
)
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


def without_previous_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without ``previous_item_id`` (a rebuild does not know items before it)."""
    return [{k: v for k, v in event.items() if k != "previous_item_id"} for event in events]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_rebuild_from_any_quiet_point_names_everything_the_same(name: str) -> None:
    make, events = SCENARIOS[name]
    original = make()
    translated = [translate_event(original, message) for message in events]
    quiet = [index for index in range(len(events)) if _quiet_after(make, events, index)]
    for index in quiet:
        rebuilt = make()
        rest = [out for message in events[index + 1 :] for out in translate_event(rebuilt, message)]
        expected = [out for outs in translated[index + 1 :] for out in outs]
        assert without_previous_ids(rest) == without_previous_ids(expected)


def test_two_spoken_turns_have_a_quiet_point_between_them() -> None:
    make, events = SCENARIOS["two_spoken_turns"]
    assert [index for index in range(len(events)) if _quiet_after(make, events, index)] == [
        3,
        6,
        10,
        13,
    ]


def test_without_transcripts_the_ends_of_answers_are_quiet_points() -> None:
    make, events = SCENARIOS["spoken_turns_without_transcripts"]
    quiet = [index for index in range(len(events)) if _quiet_after(make, events, index)]
    assert [events[index]["type"] for index in quiet] == ["response.done", "response.done"]


def _quiet_after(make: Any, events: list[dict[str, Any]], index: int) -> bool:
    state = make()
    for message in events[: index + 1]:
        translate_event(state, message)
    return bool(state.quiet)


def test_quiet_means_no_response_speech_or_transcript_in_progress() -> None:
    make, events = SCENARIOS["spoken_turn_barged_in"]
    state = make()
    assert state.quiet
    translate_event(state, events[0])  # speech started: its item is named, not committed
    assert not state.quiet


GOOD = {SESSION_HEADER: "sess_1", TOKEN_HEADER: "rt_1", LAST_EVENT_HEADER: "event_12_1"}


def test_resume_headers_name_the_session_token_and_position() -> None:
    request = resume_request(GOOD, "model=m")
    assert request == ResumeRequest("sess_1", "rt_1", EventPosition(12, 1))
    assert request.last_seq == 11
    no_last = resume_request({SESSION_HEADER: "sess_1", TOKEN_HEADER: "rt_1"}, "")
    assert no_last is not None and (no_last.seen, no_last.last_seq) == (None, 0)
    assert resume_request({}, "model=m") is None


@pytest.mark.parametrize(
    ("headers", "query", "code"),
    [
        (GOOD, "model=m&resume_token=rt_1", "resume_token_in_query"),
        ({}, "resume_token=", "resume_token_in_query"),
        ({SESSION_HEADER: "sess_1"}, "", "invalid_resume_request"),
        ({TOKEN_HEADER: "rt_1"}, "", "invalid_resume_request"),
        ({LAST_EVENT_HEADER: "event_1_0"}, "", "invalid_resume_request"),
        ({**GOOD, SESSION_HEADER: ""}, "", "invalid_resume_request"),
        ({**GOOD, TOKEN_HEADER: "t" * 257}, "", "invalid_resume_request"),
        ({**GOOD, SESSION_HEADER: "s" * 129}, "", "invalid_resume_request"),
        ({**GOOD, LAST_EVENT_HEADER: "event_c3"}, "", "invalid_event_id"),
        ({**GOOD, LAST_EVENT_HEADER: "event_0_0_c0"}, "", "invalid_event_id"),
        ({**GOOD, LAST_EVENT_HEADER: "event_1_0_cXY_1"}, "", "invalid_event_id"),
        ({**GOOD, LAST_EVENT_HEADER: "event_1_0_c1_"}, "", "invalid_event_id"),
        ({**GOOD, LAST_EVENT_HEADER: "event_0_0"}, "", "invalid_event_id"),
        ({**GOOD, LAST_EVENT_HEADER: "event_1_0 "}, "", "invalid_event_id"),
        ({**GOOD, LAST_EVENT_HEADER: ""}, "", "invalid_event_id"),
    ],
)
def test_resume_headers_that_cannot_be_served_are_refused(
    headers: dict[str, str], query: str, code: str
) -> None:
    with pytest.raises(ResumeRequestInvalid) as refused:
        resume_request(headers, query)
    assert refused.value.code == code


@pytest.mark.parametrize(
    ("last", "seen"),
    [
        ("event_0_0_c1", None),
        ("event_12_1_c5", EventPosition(12, 1)),
        ("event_12_1_c0a1b2c3d_2", EventPosition(12, 1)),
    ],
)
def test_a_connection_event_id_names_the_session_event_before_it(
    last: str, seen: EventPosition | None
) -> None:
    request = resume_request({**GOOD, LAST_EVENT_HEADER: last}, "")
    assert request is not None and request.seen == seen


def test_connection_event_ids_follow_the_last_written_session_event() -> None:
    make, _ = SCENARIOS["text_turn"]
    state = make()
    assert state.next_connection_event_id() == "event_0_0_c1"
    state.written = (4, 2)
    state.connection_tag = "0a1b2c3d"
    assert state.next_connection_event_id() == "event_4_2_c0a1b2c3d_2"


def test_a_seen_event_must_be_one_the_translation_gives() -> None:
    make, events = SCENARIOS["text_turn"]
    full = [out for message in events for out in translate_event(make(), message)]
    for out in full:
        check_replay(make(), events, parse_event_id(out["event_id"]))
    check_replay(make(), events, None)
    for never in ("event_2_4", "event_5_0", "event_1_1"):
        with pytest.raises(ResumeRequestInvalid) as refused:
            check_replay(make(), events, parse_event_id(never))
        assert refused.value.code == "invalid_event_id"

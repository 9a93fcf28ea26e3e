from __future__ import annotations

import gc
import json
import tracemalloc

import pytest

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.events import OUTPUT_JSON_DELTA, Event
from protocol.partial_json import PartialJson
from protocol.session import ResponseStatus, ServerSession, SessionLimits
from protocol.session.history import history_chars


def _session(**limits: int) -> ServerSession:
    return ServerSession("s1", SessionLimits(**limits), instructions="be brief")


def _drain(session: ServerSession) -> list[Event]:
    return session.number_pending()


def test_lifecycle_numbers_events_and_ends_once() -> None:
    session = _session()
    session.add_user_text("hello there")
    response = session.begin_response()
    for word in ["one", " two", " three"]:
        session.record_output(response, word, 1)
    assert session.end_response(response, ResponseStatus.COMPLETED, input_tokens=9)
    assert not session.end_response(response, ResponseStatus.FAILED)
    events = _drain(session)
    assert [e.seq for e in events] == [1, 2, 3]
    assert [e.type for e in events] == ["response.created", "response.text.delta", "response.done"]
    assert events[1].fields["delta"] == "one two three"
    done = events[2].to_message()
    assert done["status"] == "completed"
    assert done["usage"] == {
        "input_tokens": 9,
        "output_tokens_generated": 3,
        "output_tokens_delivered": 3,
        "output_tokens_acknowledged": 0,
    }
    assert [t.role for t in session.history()] == ["system", "user", "assistant"]
    assert session.history()[-1].text == "one two three"
    assert session.active is None


def test_deltas_sent_one_by_one_when_the_client_keeps_up() -> None:
    session = _session()
    session.add_user_text("q")
    response = session.begin_response()
    seqs = [session.next_event().seq]  # type: ignore[union-attr]
    for word in ["a", "b", "c"]:
        session.record_output(response, word, 1)
        event = session.next_event()
        assert event is not None
        seqs.append(event.seq)
        assert event.fields["delta"] == word
    assert seqs == [1, 2, 3, 4]


def test_interrupt_drops_unsent_output_and_truncates_history() -> None:
    session = _session()
    session.add_user_text("q")
    response = session.begin_response()
    for word in ["a", " b", " c"]:
        session.record_output(response, word, 1)
        session.next_event()
    session.next_event()
    # Three more tokens generated, never sent.
    for word in [" d", " e", " f"]:
        session.record_output(response, word, 1)
    session.end_response(response, ResponseStatus.INTERRUPTED, reason="client", generated_tokens=6)
    events = _drain(session)
    assert [e.type for e in events] == ["response.done"]
    usage = events[0].fields["usage"]
    assert usage["output_tokens_generated"] == 6
    assert usage["output_tokens_delivered"] == 3
    assert session.history()[-1].text == "a b c"
    # Output racing the abort is counted, not sent.
    session.record_output(response, " g", 1)
    assert session.next_event() is None
    assert session.usage.output_tokens_generated == 7


@pytest.mark.parametrize(("rendered", "kept"), [(3, "a b"), (0, None), (999, "a b c")])
def test_interrupt_keeps_what_the_client_rendered(rendered: int, kept: str | None) -> None:
    session = _session()
    session.add_user_text("q")
    response = session.begin_response()
    for word in ["a", " b", " c"]:
        session.record_output(response, word, 1)
    session.number_pending()
    session.end_response(response, ResponseStatus.INTERRUPTED, rendered_chars=rendered)
    last = session.history()[-1]
    if kept is None:
        assert last.role == "user"
    else:
        assert (last.role, last.text) == ("assistant", kept)


def test_cancel_drops_the_assistant_turn() -> None:
    session = _session()
    session.add_user_text("q")
    response = session.begin_response()
    session.record_output(response, "partial", 1)
    session.number_pending()
    session.end_response(response, ResponseStatus.CANCELLED, reason="client")
    assert session.history()[-1].role == "user"


def test_state_violations() -> None:
    session = _session(max_input_chars=10)
    with pytest.raises(ProtocolViolation) as info:
        session.begin_response()
    assert info.value.code is ErrorCode.NOTHING_TO_ANSWER
    with pytest.raises(ProtocolViolation) as info:
        session.check_active(None)
    assert info.value.code is ErrorCode.NO_ACTIVE_RESPONSE
    with pytest.raises(ProtocolViolation) as info:
        session.add_user_text("x" * 11)
    assert info.value.code is ErrorCode.INPUT_TOO_LONG
    session.add_user_text("q")
    response = session.begin_response()
    with pytest.raises(ProtocolViolation) as info:
        session.begin_response()
    assert info.value.code is ErrorCode.RESPONSE_IN_PROGRESS
    with pytest.raises(ProtocolViolation) as info:
        session.check_active("resp_99")
    assert info.value.code is ErrorCode.NO_ACTIVE_RESPONSE
    assert session.check_active(response.id) is response


def test_errors_are_sequenced_events() -> None:
    session = _session()
    session.queue_error(ProtocolViolation(ErrorCode.UNKNOWN_TYPE, "unknown type 'x'", "r7"))
    (event,) = session.number_pending()
    assert event.to_message() == {
        "type": "error",
        "seq": 1,
        "code": "unknown_type",
        "message": "unknown type 'x'",
        "request_id": "r7",
    }


def test_max_output_tokens_is_capped_by_the_session_limit() -> None:
    session = _session(max_output_tokens=50)
    session.add_user_text("q")
    assert session.begin_response(10_000).max_output_tokens == 50


def test_settled_responses_are_reported_once() -> None:
    session = _session()
    session.add_user_text("q")
    response = session.begin_response()
    session.end_response(response, ResponseStatus.COMPLETED)
    assert session.take_settled() == []
    assert session.unsettled() == [response]
    session.number_pending()
    assert session.take_settled() == [response]
    assert session.take_settled() == []


def test_user_text_during_a_response_follows_its_answer() -> None:
    session = _session()
    session.add_user_text("first")
    response = session.begin_response(request_id="req-1")
    session.record_output(response, "answer", 1)
    session.add_user_text("second")
    session.end_response(response, ResponseStatus.COMPLETED)
    assert [(t.role, t.text) for t in session.history()[1:]] == [
        ("user", "first"),
        ("assistant", "answer"),
        ("user", "second"),
    ]
    created = session.number_pending()[0]
    assert created.to_message()["request_id"] == "req-1"
    # The queued turn can be answered without repeating it.
    assert session.begin_response().id == "resp_2"


def test_a_long_answer_keeps_one_copy_of_its_text() -> None:
    # 50,000 tokens sent one by one into a small replay buffer: what stays is the
    # bounded buffer and the answer's text once, not a string per token.
    session = _session(replay_max_bytes=64 * 1024, max_output_tokens=100_000)
    session.keep_unpersisted = False  # the runtime hands those to the store every few ms
    session.add_user_text("a long one")
    response = session.begin_response()
    words = [" the", " word", " and", " people", " a", " number"]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(50_000):
            session.record_output(response, words[i % 6] + str(i % 10), 1)
            session.next_event()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    chars = response.generated_chars
    assert session.replay.nbytes <= 64 * 1024
    assert held <= session.replay.nbytes + 1.2 * chars + 16 * 1024, (held, chars)
    assert response.delivered_text() == response.generated_text()
    assert len(response.generated_text()) == chars


def test_history_is_trimmed_to_its_bound_oldest_turns_first() -> None:
    session = _session(history_max_chars=1000)
    for n in range(20):
        session.add_user_text(f"question {n} " + "q" * 100)
        response = session.begin_response()
        session.record_output(response, f"answer {n} " + "a" * 100, 1)
        session.end_response(response, ResponseStatus.COMPLETED)
        session.number_pending()
        assert history_chars(session) <= 1000
    turns = session.history()
    assert turns[0].role == "system", "the instructions are not part of the trimmed history"
    assert turns[-1].text.startswith("answer 19")
    assert turns[1].text.startswith("question"), "whole exchanges go, oldest first"
    assert session.limits.to_dict()["history_max_chars"] == 1000


def test_acks_count_acknowledged_tokens_apart_from_delivered_ones() -> None:
    session = _session()
    session.add_user_text("q")
    response = session.begin_response()
    session.next_event()  # response.created: seq 1
    for word in ["a", "b", "c", "d"]:
        session.record_output(response, word, 1)
        session.next_event()  # seq 2..5
    session.ack(3)
    assert response.usage().output_tokens_delivered == 4
    assert response.usage().output_tokens_acknowledged == 2
    session.end_response(response, ResponseStatus.COMPLETED)
    done = session.number_pending()[-1].to_message()
    assert done["usage"]["output_tokens_acknowledged"] == 2, "as of when the done was sent"
    session.ack(6)
    assert session.usage.output_tokens_acknowledged == 4


def test_provisional_json_values_count_their_size_toward_the_outbox_bound() -> None:
    # Every change of a structured answer queues its whole value so far: a lagging
    # client's outbox holds quadratic bytes unless each value is counted.
    session = _session()
    session.add_user_text("list them")
    response = session.begin_response()
    response.output_json = PartialJson()
    for i in range(200):
        session.record_output(response, ("[" if i == 0 else ",") + f'"item {i}"', 1)
    values = [e.fields["value"] for e in session.outbox.pending() if e.type == OUTPUT_JSON_DELTA]
    assert len(values) == 200
    held = sum(len(json.dumps(v, separators=(",", ":"))) for v in values)
    assert session.outbox.nbytes >= held

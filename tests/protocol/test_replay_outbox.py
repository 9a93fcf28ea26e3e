from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import pytest

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation, ResumeRefused
from protocol.events import Event, TextDelta
from protocol.outbox import MAX_MERGED_BYTES, Outbox
from protocol.replay import ReplayBuffer, memory_of


def _numbered(buffer: ReplayBuffer, n: int, size: int = 64) -> None:
    for _ in range(n):
        event = Event("x", {}, size=size)
        event.seq = buffer.last_seq + 1
        buffer.append(event)


def test_replay_returns_exactly_the_missed_events() -> None:
    buffer = ReplayBuffer(max_events=100, max_bytes=1 << 20)
    _numbered(buffer, 10)
    assert [e.seq for e in buffer.after(6)] == [7, 8, 9, 10]
    assert list(buffer.after(10)) == []


def test_replay_bounded_by_count_then_refuses_old_resume() -> None:
    buffer = ReplayBuffer(max_events=5, max_bytes=1 << 20)
    _numbered(buffer, 12)
    assert len(buffer) == 5
    assert buffer.first_seq == 8
    assert buffer.forgotten_unacked == 7
    assert [e.seq for e in buffer.after(7)] == [8, 9, 10, 11, 12]
    with pytest.raises(ResumeRefused) as info:
        buffer.after(6)
    assert info.value.code is ErrorCode.REPLAY_UNAVAILABLE


def test_replay_bounded_by_bytes() -> None:
    one = memory_of(Event("x", {}, size=100))
    buffer = ReplayBuffer(max_events=1000, max_bytes=10 * one)
    _numbered(buffer, 50, size=100)
    assert buffer.nbytes <= 10 * one
    assert len(buffer) == 10


def test_ack_trims_and_future_seq_is_refused() -> None:
    buffer = ReplayBuffer(max_events=100, max_bytes=1 << 20)
    _numbered(buffer, 10)
    buffer.ack(4)
    assert buffer.first_seq == 5
    assert buffer.forgotten_unacked == 0
    buffer.ack(2)  # an old ack is harmless
    assert buffer.first_seq == 5
    with pytest.raises(ProtocolViolation) as info:
        buffer.ack(11)
    assert info.value.code is ErrorCode.INVALID_SEQ
    with pytest.raises(ResumeRefused) as info:
        buffer.after(11)
    assert info.value.code is ErrorCode.INVALID_SEQ


def test_replay_rejects_out_of_order_append() -> None:
    buffer = ReplayBuffer(max_events=10, max_bytes=1000)
    event = Event("x", {})
    event.seq = 2
    with pytest.raises(ValueError, match="does not follow"):
        buffer.append(event)


def test_outbox_merges_consecutive_deltas_of_one_response() -> None:
    outbox = Outbox()
    outbox.push(Event("response.created", {}, response_id="r1"))
    for word in ["a", " b", " c"]:
        outbox.push_text("r1", word, 1)
    outbox.push_text("r2", "x", 1)
    outbox.push_text("r1", " d", 1)
    assert len(outbox) == 4
    assert outbox.merged == 2
    created, merged, other, last = (outbox.pop() for _ in range(4))
    assert created is not None and created.type == "response.created"
    assert isinstance(merged, TextDelta)
    assert merged.seal() == "a b c"
    assert merged.tokens == 3
    assert isinstance(other, TextDelta) and other.seal() == "x"
    assert isinstance(last, TextDelta) and last.seal() == " d"
    assert outbox.pop() is None
    assert outbox.nbytes == 0


def test_outbox_drop_response_keeps_other_events() -> None:
    outbox = Outbox()
    outbox.push_text("r1", "abc", 2)
    outbox.push(Event("response.done", {}, response_id="r1"))
    outbox.push_text("r1", "zzz", 5)
    assert outbox.drop_response("r1") == 7
    event = outbox.pop()
    assert event is not None and event.type == "response.done"
    assert outbox.nbytes == 0


def test_merged_delta_stops_growing_at_the_cap() -> None:
    outbox = Outbox()
    for _ in range(MAX_MERGED_BYTES // 100 * 3):
        outbox.push_text("r1", "x" * 100, 1)
    assert 2 <= len(outbox) <= 4
    sizes = []
    while (event := outbox.pop()) is not None:
        assert isinstance(event, TextDelta)
        sizes.append(len(event.seal()))
    assert max(sizes) <= MAX_MERGED_BYTES + 100


def _held_bytes(build: Callable[[], object]) -> tuple[object, int]:
    """What ``build`` leaves allocated (its result kept alive), as tracemalloc counts it."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        return kept, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


_WORDS = [" the", " word", " and", " people", " a", " number"]


def test_replay_bytes_bound_the_memory_of_one_token_events() -> None:
    # A client that keeps up gets one event per token: thousands of small events.
    def build() -> ReplayBuffer:
        buffer = ReplayBuffer(max_events=1 << 20, max_bytes=1 << 30)
        for i in range(20_000):
            event = TextDelta("resp_1", _WORDS[i % 6] + str(i % 10), 1)
            event.seal()
            event.seq = buffer.last_seq + 1
            buffer.append(event)
        return buffer

    buffer, held = _held_bytes(build)
    assert isinstance(buffer, ReplayBuffer)
    assert held <= buffer.nbytes * 1.1, f"{held} bytes held, {buffer.nbytes} accounted"


def test_outbox_bytes_bound_the_memory_of_a_merged_backlog() -> None:
    # A stalled client: a long answer queues up token by token.
    def build() -> Outbox:
        outbox = Outbox()
        for i in range(50_000):
            outbox.push_text("resp_1", _WORDS[i % 6] + str(i % 10), 1)
        return outbox

    outbox, held = _held_bytes(build)
    assert isinstance(outbox, Outbox)
    assert held <= outbox.nbytes * 1.2, f"{held} bytes held, {outbox.nbytes} accounted"


def _token_event(buffer: ReplayBuffer, response_id: str, tokens: int) -> None:
    event = TextDelta(response_id, "x" * tokens, tokens)
    event.seal()
    event.seq = buffer.last_seq + 1
    buffer.append(event)


def test_acks_credit_the_tokens_they_cover_also_after_the_bounds_forgot_them() -> None:
    buffer = ReplayBuffer(max_events=4, max_bytes=1 << 20)
    for _ in range(6):
        _token_event(buffer, "resp_1", 2)  # seq 1..6; 1 and 2 forgotten unacked
    _token_event(buffer, "resp_2", 1)  # seq 7; 3 forgotten
    assert buffer.forgotten_unacked == 3
    assert buffer.ack(2) == [], "a run covered only in part is not credited"
    assert buffer.ack(5) == [("resp_1", 6), ("resp_1", 2), ("resp_1", 2)]
    assert buffer.ack(5) == []
    assert buffer.ack(7) == [("resp_1", 2), ("resp_2", 1)]

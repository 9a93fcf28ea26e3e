"""A damaged replay log in the store: read as a hole, never a traceback or a lost session.

The unit tests feed :mod:`wsserver.worker.stored_log` stored slices. The rest damage one
entry of a real Redis log (its bytes, its shape, its seq, its payload field) and resume
the session on another real worker: a resume that needs the entry is refused before the
claim (its owner keeps the session), one that does not goes on from the readable tail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack
import pytest

from tests.processes import WorkerProcess
from tests.wsserver.wire import RawClient
from tests.wsserver.worker.damaged_store import (
    answered_on,
    damage_log_entry,
    stored_epoch,
)
from wsserver.store.base import LogSlice
from wsserver.worker.stored_log import (
    StoredLog,
    contiguous_tail,
    decode_log,
    first_hole,
    tail_for,
)


def _payload(seq: int, **fields: Any) -> bytes:
    packed: bytes = msgpack.packb({"type": "response.text.delta", "seq": seq, **fields})
    return packed


def _slice(first: int, *entries: tuple[int, bytes]) -> LogSlice:
    return LogSlice(first, list(entries))


def _seqs(stored: StoredLog) -> list[tuple[int, bool]]:
    return [(seq, event is not None) for seq, event in stored.entries]


# -- decoding -----------------------------------------------------------------


@pytest.mark.parametrize(
    "damaged",
    [
        b"\xc1garbage",  # not msgpack
        b"",  # no payload at all (an entry without its field)
        msgpack.packb([1, 2, 3]),  # msgpack, not a map
        msgpack.packb({"seq": 3}),  # no type
        msgpack.packb({"type": "x", "seq": "3"}),  # seq not an integer
        msgpack.packb({"type": "x", "seq": True}),  # a bool is not a seq
        msgpack.packb({"type": "x", "seq": 4}),  # another entry's seq
        msgpack.packb({"type": "x", "seq": 3, "response_id": 7}),  # response id not text
        msgpack.packb({"type": "x", "seq": 3, b"raw": 1}, use_bin_type=True),  # a bytes key
        b"\x91" * 100_000 + b"\x01",  # nested far deeper than any event
        msgpack.packb({"type": "x", "seq": 3, "delta": b"\xff"}, use_bin_type=True),  # bytes
        msgpack.packb({"type": "x", "seq": 3, "n": float("inf")}),  # not finite
        msgpack.packb({"type": "x", "seq": 3, "v": msgpack.ExtType(1, b"")}),  # an ext type
        msgpack.packb({"type": "x", "seq": 3, "v": [{b"k": 1}]}, use_bin_type=True),
        msgpack.packb({"type": "response.audio.delta", "seq": 3, "stream_id": 1}),  # no audio
        msgpack.packb(
            {"type": "response.audio.delta", "seq": 3, "stream_id": -1, "audio": b"\0\0"},
            use_bin_type=True,
        ),
    ],
)
def test_an_entry_that_is_not_an_event_of_its_seq_is_unreadable(damaged: bytes) -> None:
    stored = decode_log("s", _slice(2, (2, _payload(2)), (3, damaged), (4, _payload(4))))
    assert _seqs(stored) == [(2, True), (3, False), (4, True)]
    assert [event.seq for event in stored.events] == [2, 4]


def test_a_readable_entry_keeps_its_fields_and_size() -> None:
    payload = _payload(5, response_id="resp_1", delta="hi")
    (event,) = decode_log("s", _slice(5, (5, payload))).events
    assert (event.seq, event.type, event.response_id) == (5, "response.text.delta", "resp_1")
    assert event.fields["delta"] == "hi"
    assert event.size == len(payload)


def test_an_audio_entry_keeps_its_pcm() -> None:
    message = {
        "type": "response.audio.delta",
        "seq": 5,
        "response_id": "resp_2",
        "stream_id": 2,
        "audio": b"\x01\x00",
        "duration_ms": 0.0625,
    }
    (event,) = decode_log("s", _slice(5, (5, msgpack.packb(message, use_bin_type=True)))).events
    assert (event.type, event.fields["audio"], event.fields["stream_id"]) == (
        "response.audio.delta",
        b"\x01\x00",
        2,
    )


def test_unreadable_entries_are_logged_once_with_their_range(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decode_log("sess_x", _slice(1, (1, b"\xc1"), (2, _payload(2)), (3, b"")))
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [
        "stored replay log of sess_x: 2 unreadable entries (seq 1..3); read as a hole"
    ]


# -- holes ----------------------------------------------------------------------


def _log(first: int, *readable: tuple[int, bool]) -> StoredLog:
    return decode_log(
        "s", _slice(first, *((seq, _payload(seq) if ok else b"\xc1") for seq, ok in readable))
    )


def test_an_unreadable_entry_is_a_hole_like_a_missing_one() -> None:
    log = _log(1, (1, True), (2, True), (3, False), (4, True))
    assert first_hole(log, 1) == (3, 3)
    assert first_hole(log, 3) == (3, 3)
    assert first_hole(log, 4) is None
    # The same log with seq 3 trimmed out instead.
    assert first_hole(_log(1, (1, True), (2, True), (4, True)), 1) == (3, 3)


def test_a_run_of_unreadable_and_missing_entries_is_one_hole() -> None:
    log = _log(1, (1, True), (2, False), (4, False), (5, True))
    assert first_hole(log, 2) == (2, 4)


def test_unreadable_newest_entries_are_a_hole_to_the_end() -> None:
    log = _log(1, (1, True), (2, False), (3, False))
    assert first_hole(log, 1) == (2, 3)
    assert first_hole(log, 3) == (3, 3)
    assert first_hole(log, 4) is None


def test_the_log_before_its_first_entry_is_a_hole() -> None:
    assert first_hole(_log(5, (5, True)), 3) == (3, 4)


def test_the_contiguous_tail_starts_after_the_last_unreadable_entry() -> None:
    log = _log(1, (1, True), (2, False), (3, True), (4, True))
    tail = contiguous_tail(log)
    assert (tail.first_seq, _seqs(tail)) == (3, [(3, True), (4, True)])
    # A gap after the unreadable entry starts the tail later still.
    gap = contiguous_tail(_log(1, (1, True), (2, False), (3, True), (5, True)))
    assert (gap.first_seq, _seqs(gap)) == (5, [(5, True)])


def test_an_unreadable_newest_entry_leaves_no_tail() -> None:
    tail = contiguous_tail(_log(1, (1, True), (2, True), (3, False)))
    assert (tail.first_seq, tail.entries) == (4, [])
    assert first_hole(tail_for(tail, 2), 3) == (3, 3)


def test_a_whole_readable_log_is_its_own_tail() -> None:
    log = _log(1, (1, True), (2, True))
    assert contiguous_tail(log) is log
    assert tail_for(log, 1) is log
    assert tail_for(log, 3).entries == []


# -- a real takeover from a damaged Redis log ---------------------------------


def _entry(seq: int, **fields: Any) -> dict[bytes, bytes]:
    """A stored entry of a text delta of ``seq`` whose fields are ``fields``."""
    message = {"type": "response.text.delta", "seq": seq, "response_id": "resp_x", **fields}
    return {b"p": msgpack.packb(message, use_bin_type=True)}


def _audio(seq: int, response_id: str | None, stream_id: int, pcm: bytes) -> dict[bytes, bytes]:
    """A stored audio delta of ``seq``."""
    message = {
        "type": "response.audio.delta",
        "seq": seq,
        "response_id": response_id,
        "stream_id": stream_id,
        "audio": pcm,
        "duration_ms": 20.0,
    }
    return {b"p": msgpack.packb(message, use_bin_type=True)}


DAMAGE: dict[str, Callable[[int], dict[bytes, bytes]]] = {
    "garbage": lambda seq: {b"p": b"\xc1\xc1\xc1"},
    "wrong shape": lambda seq: {b"p": msgpack.packb(["response.text.delta", seq])},
    "another seq": lambda seq: _entry(999, delta="x"),
    "no payload field": lambda seq: {b"x": b"1"},
    # An event of its seq, but with a value no encoding of the wire can carry.
    "a bytes value": lambda seq: _entry(seq, delta=b"\xff\xfe"),
    "a number that is not finite": lambda seq: _entry(seq, delta="x", weight=float("nan")),
    "an ext type": lambda seq: _entry(seq, delta=msgpack.ExtType(5, b"x")),
    "a nested key that is bytes": lambda seq: _entry(seq, delta="x", extra={b"k": 1}),
    "audio that is not bytes": lambda seq: {
        b"p": msgpack.packb(
            {
                "type": "response.audio.delta",
                "seq": seq,
                "response_id": "r",
                "stream_id": 1,
                "audio": "not audio",
                "duration_ms": 20.0,
            }
        )
    },
    "audio of half a sample": lambda seq: _audio(seq, "resp_1", 1, b"\x00\x00\x00"),
    "audio on another response's stream": lambda seq: _audio(seq, "resp_1", 2, b"\x00\x00"),
    "audio of no response": lambda seq: _audio(seq, None, 1, b"\x00\x00"),
    "audio of no stream": lambda seq: {
        b"p": msgpack.packb(
            {
                "type": "response.audio.delta",
                "seq": seq,
                "response_id": "r",
                "stream_id": 2**40,
                "audio": b"\x00\x00",
                "duration_ms": 20.0,
            },
            use_bin_type=True,
        )
    },
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
async def test_a_resume_that_needs_an_unreadable_entry_is_refused_before_the_claim(
    damage: str, workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    ready, seqs = await answered_on(a.url, redis_url)
    session_id = ready["session_id"]
    # An entry in the middle of the answer; the client missed it and all after it.
    damaged = seqs[len(seqs) // 2]
    await damage_log_entry(redis_url, session_id, damaged, DAMAGE[damage](damaged))
    epoch = await stored_epoch(redis_url, session_id)
    client = await RawClient.connect(b.url)
    await client.resume(ready, damaged - 1)
    error = await client.until("error")
    assert error["code"] == "replay_unavailable", error
    assert error["message"] == f"events {damaged}..{damaged} are no longer stored"
    assert error["snapshot"]["conversation"][0] == {"role": "user", "text": "hello"}
    await client.closed_code()
    # Not claimed: A still owns it, and A's own copy still resumes it whole.
    assert await stored_epoch(redis_url, session_id) == epoch
    assert b.stats()["store"]["takeovers"] == 0
    again = await RawClient.connect(a.url)
    await again.resume(ready, damaged - 1)
    assert (await again.until("session.ready"))["resumed"] is True
    await again.until("response.done")
    assert [m["seq"] for m in again.seen if "seq" in m] == [s for s in seqs if s >= damaged]
    await again.close()
    assert "Traceback" not in "".join(a.lines + b.lines)


async def test_a_resume_past_an_unreadable_entry_goes_on_from_the_readable_tail(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    ready, seqs = await answered_on(a.url, redis_url)
    damaged = seqs[len(seqs) // 2]
    await damage_log_entry(redis_url, ready["session_id"], damaged, DAMAGE["garbage"](damaged))
    client = await RawClient.connect(b.url)
    # The client saw all but the last two events: both come from the tail after the hole.
    await client.resume(ready, seqs[-3])
    assert (await client.until("session.ready"))["resumed"] is True
    await client.until("response.done")
    assert [m["seq"] for m in client.seen if "seq" in m] == seqs[-2:]
    assert b.stats()["store"]["takeovers"] == 1
    # The session goes on at B, numbered after what came before.
    await client.send({"type": "response.create", "input": "and again"})
    done = await client.until("response.done")
    assert done["status"] == "completed"
    later = [m["seq"] for m in client.seen if "seq" in m]
    assert later == list(range(seqs[-2], later[-1] + 1))
    await client.close()
    assert "Traceback" not in "".join(a.lines + b.lines)


async def test_an_unreadable_newest_entry_refuses_only_the_resumes_that_need_it(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    ready, seqs = await answered_on(a.url, redis_url)
    await damage_log_entry(redis_url, ready["session_id"], seqs[-1], DAMAGE["garbage"](seqs[-1]))
    refused = await RawClient.connect(b.url)
    await refused.resume(ready, seqs[-2])
    error = await refused.until("error")
    assert error["code"] == "replay_unavailable"
    assert error["message"] == f"events {seqs[-1]}..{seqs[-1]} are no longer stored"
    await refused.closed_code()
    # A client that had the done needs nothing from the log.
    client = await RawClient.connect(b.url)
    await client.resume(ready, seqs[-1])
    assert (await client.until("session.ready"))["resumed"] is True
    await client.send({"type": "response.create", "input": "more"})
    await client.until("response.done")
    assert next(m["seq"] for m in client.seen if "seq" in m) == seqs[-1] + 1
    await client.close()
    assert "Traceback" not in "".join(a.lines + b.lines)

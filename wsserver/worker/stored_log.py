"""A session's replay log as a takeover reads it back from the store.

Each entry is decoded on its own. One that does not read back as an event of its own
seq that every encoding can carry (damaged bytes, another version's layout, a partial
write, a value JSON has no form for) is a hole, exactly as if the log had been trimmed
there: a resume that needs it is refused with
``replay_unavailable`` and the snapshot, one that does not goes on from the readable
events after it, and no reader of the log ever sees a traceback.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import msgpack

from protocol.audio_frame import MAX_STREAM_ID, response_stream_id
from protocol.events import AUDIO_DELTA, Event, event_from_message
from protocol.json_value import NotJsonData, check_json_data
from wsserver.store.base import LogSlice

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StoredLog:
    """Stored events after a seq, decoded; ``None`` where an entry is unreadable."""

    first_seq: int
    """The oldest seq the store's log still holds (readable or not)."""
    entries: list[tuple[int, Event | None]]

    @property
    def events(self) -> list[Event]:
        """The readable events, in order."""
        return [event for _seq, event in self.entries if event is not None]


def decode_log(session_id: str, log_slice: LogSlice) -> StoredLog:
    """``log_slice`` with every entry decoded, or marked unreadable (and logged once)."""
    entries = [(seq, _event(seq, payload)) for seq, payload in log_slice.events]
    unreadable = [seq for seq, event in entries if event is None]
    if unreadable:
        log.error(
            "stored replay log of %s: %d unreadable entries (seq %d..%d); read as a hole",
            session_id,
            len(unreadable),
            unreadable[0],
            unreadable[-1],
        )
    return StoredLog(log_slice.first_seq, entries)


def _event(seq: int, payload: Any) -> Event | None:
    if not isinstance(payload, bytes):
        return None
    try:
        message = msgpack.unpackb(payload, raw=False)
    except (msgpack.UnpackException, ValueError, TypeError, RecursionError):
        return None
    # An entry is an event of its own seq, or nothing this server can vouch for.
    if (
        not isinstance(message, dict)
        or not isinstance(message.get("type"), str)
        or type(message.get("seq")) is not int
        or message["seq"] != seq
        or not all(isinstance(key, str) for key in message)
    ):
        return None
    response_id = message.get("response_id")
    if response_id is not None and not isinstance(response_id, str):
        return None
    if not _encodable(message):
        return None
    return event_from_message(message, len(payload))


def _encodable(message: dict[str, Any]) -> bool:
    """Whether every encoding of the wire can carry ``message`` (JSON above all).

    Msgpack holds what JSON cannot (bytes, ext types, non-string keys, NaN): written by
    this server such a value is only ever an audio event's PCM, which travels in its
    own binary frame (and is checked as a frame's reader checks it).
    """
    if message["type"] == AUDIO_DELTA:
        if not _as_written(message):
            return False
        message = {key: value for key, value in message.items() if key != "audio"}
    try:
        check_json_data(message)
    except NotJsonData:
        return False
    return True


def _as_written(audio_delta: dict[str, Any]) -> bool:
    """Whether an audio delta is as this server writes one: whole PCM16 samples, on its
    own response's stream (a client rejects a frame that is not)."""
    audio, stream_id = audio_delta.get("audio"), audio_delta.get("stream_id")
    response_id = audio_delta.get("response_id")
    if not isinstance(audio, bytes) or len(audio) % 2 or type(stream_id) is not int:
        return False
    if not isinstance(response_id, str) or not 0 <= stream_id <= MAX_STREAM_ID:
        return False
    try:
        return stream_id == response_stream_id(response_id)
    except ValueError:
        return False


def first_hole(stored: StoredLog, missing_from: int) -> tuple[int, int] | None:
    """The first run of seqs from ``missing_from`` on that the log lacks or cannot read."""
    if stored.first_seq > missing_from:
        return missing_from, stored.first_seq - 1
    expected = missing_from
    hole_from: int | None = None
    for seq, event in stored.entries:
        if seq < expected:
            continue
        if hole_from is None and (seq > expected or event is None):
            hole_from = expected
        if hole_from is not None and event is not None:
            return hole_from, seq - 1
        expected = seq + 1
    return (hole_from, expected - 1) if hole_from is not None else None


def tail_for(stored: StoredLog, last_seq: int) -> StoredLog:
    """The log a resume from ``last_seq`` replays from; none when the client holds
    events never stored (numbering goes on after them)."""
    if not stored.entries or stored.entries[-1][0] < last_seq:
        return StoredLog(stored.first_seq, [])
    return stored


def contiguous_tail(stored: StoredLog) -> StoredLog:
    """The readable log from its last hole on: a replay buffer has no holes.

    When the newest entry itself is unreadable, nothing is left: the log then starts
    after it, and a resume that needs any of it is refused.
    """
    entries = stored.entries
    start = 0
    for index, (seq, event) in enumerate(entries):
        if event is None:
            start = index + 1
        elif index > start and seq != entries[index - 1][0] + 1:
            start = index
    if start == 0:
        return stored
    if start == len(entries):
        return StoredLog(entries[-1][0] + 1, [])
    return StoredLog(entries[start][0], entries[start:])

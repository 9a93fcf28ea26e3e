"""How the Redis store lays a session out: its key names, and its fields read back.

Keys of a session (one hash slot, thanks to the ``{session-id}`` tag):

* ``wss:{id}:meta``    hash: token hash, created_at, epoch, owner, snapshots, log_bytes
* ``wss:{id}:log``     stream: one entry per event, entry id ``<seq>-0``
* ``wss:{id}:partial`` string: persisted text of the latest response
* ``wss:{id}:lease``   string: the owner's id, expiring unless renewed
* ``wss:{id}:usage``   list: the usage ledger, one JSON entry per response
* ``wss:{id}:tools``   hash: the tool-call ledger (layout in ``redis_scripts``),
  with the record's TTL, deleted with it

and one key per client token that opened sessions, ``wss:token:{jti}:sessions``
(the count, living as long as the token). The worker registry reads the lease
(:func:`lease_key`) to find a session's owner, and never writes it.
"""

from __future__ import annotations

import json
from typing import Any

from wsserver.store.base import SessionRecord, StoredDataUnreadable, ToolCallRecord

_UNREADABLE = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
    RecursionError,
    OverflowError,
)
"""What parsing a damaged field raises (``json.JSONDecodeError`` and
``UnicodeDecodeError`` are value errors; a missing field is a ``KeyError``; JSON
nested deeper than the parser recurses is a ``RecursionError``; a number too big for
a float, or an infinity made an int, is an ``OverflowError``)."""


def session_tag(session_id: str) -> str:
    """``{ID}``, the hash tag of a session's keys: one slot on a Redis Cluster.

    A ``}`` in the id is escaped: a client's resume may name any id, and ``}x`` would
    leave an empty tag, so each key hashed whole onto its own slot and a script over
    them failed (CROSSSLOT). Server-made ids never hold one, so their keys are unchanged.
    """
    return "{" + session_id.replace("}", "%7D") + "}"


def session_keys(session_id: str) -> tuple[str, str, str, str, str]:
    """meta, log, partial, lease and tools: the keys the store's scripts take."""
    tag = session_tag(session_id)
    return (
        f"wss:{tag}:meta",
        f"wss:{tag}:log",
        f"wss:{tag}:partial",
        f"wss:{tag}:lease",
        f"wss:{tag}:tools",
    )


def lease_key(session_id: str) -> str:
    """The owner lease of a session: the owner's id, expiring unless renewed."""
    return f"wss:{session_tag(session_id)}:lease"


def usage_key(session_id: str) -> str:
    """The usage ledger of a session."""
    return f"wss:{session_tag(session_id)}:usage"


def ended_key(session_id: str) -> str:
    """A removed session's last epoch, kept a while: its old owner's late writes and
    renewals are then stale (it was fenced), not a record the store lost to rewrite."""
    return f"wss:{session_tag(session_id)}:ended"


def client_token_key(token_id: str) -> str:
    """The count of sessions a client token opened."""
    return "wss:token:{" + token_id + "}:sessions"


def milliseconds(seconds: float) -> int:
    """A TTL for Redis: whole milliseconds, at least one (0 would not expire)."""
    return max(1, int(seconds * 1000))


def compact_json(data: dict[str, Any]) -> str:
    """JSON without spaces, as the ledger stores it."""
    return json.dumps(data, separators=(",", ":"))


def read_tool_call(call: bytes, outcome: bytes | None) -> ToolCallRecord:
    """A ledger entry from its stored ``[order, record]`` and outcome, if any.

    Raises :class:`StoredDataUnreadable` for an entry that does not read back.
    """
    try:
        data: dict[str, Any] = json.loads(call)[1]
        if outcome is not None:
            data.update(json.loads(outcome))
        return ToolCallRecord.from_dict(data)
    except _UNREADABLE as exc:
        raise StoredDataUnreadable(f"tool-call ledger entry: {exc!r}") from None


def tool_call_order(call: bytes) -> int:
    """Where a ledger entry ``[order, record]`` comes among the session's calls.

    Raises :class:`StoredDataUnreadable` for an entry that does not read back.
    """
    try:
        order = json.loads(call)[0]
        if type(order) is not int:
            # The ledger's script writes a whole number; 1e400 or 1.5 is damage.
            raise TypeError(f"order {order!r} is not a whole number")
        return order
    except _UNREADABLE as exc:
        raise StoredDataUnreadable(f"tool-call ledger entry: {exc!r}") from None


def seq_of(entry_id: bytes) -> int:
    """The event seq of a log entry id ``<seq>-0``."""
    return int(entry_id.split(b"-", 1)[0])


def last_stored_seq(stream: bytes | None, default: int) -> int:
    """The stream snapshot's ``last_seq`` (``default`` where none is stored yet).

    Raises :class:`StoredDataUnreadable` for a snapshot that does not read back.
    """
    if not stream:
        return default
    try:
        return int(json.loads(stream).get("last_seq", default))
    except _UNREADABLE as exc:
        raise StoredDataUnreadable(f"stream snapshot: {exc!r}") from None


def read_record(
    session_id: str, fields: dict[bytes, bytes], partial: bytes | None, lease_live: bool
) -> SessionRecord:
    """A session record from its meta hash, partial text and whether its lease is held.

    Raises :class:`StoredDataUnreadable` when a field is missing or does not read back
    as its type (the snapshots' own shape is the takeover's to check).
    """
    try:
        record = SessionRecord(
            session_id=session_id,
            token_hash=fields[b"token_hash"].decode(),
            created_at=float(fields[b"created_at"]),
            epoch=int(fields[b"epoch"]),
            owner=fields.get(b"owner", b"").decode() or None,
            owner_live=lease_live,
            conversation=json.loads(fields.get(b"conversation", b"{}")),
            stream=json.loads(fields.get(b"stream", b"{}")),
            partial_text=partial.decode() if partial else "",
            principal=fields.get(b"principal", b"anonymous").decode(),
        )
    except _UNREADABLE as exc:
        raise StoredDataUnreadable(f"session record: {exc!r}") from None
    if not isinstance(record.conversation, dict) or not isinstance(record.stream, dict):
        raise StoredDataUnreadable("session record: a snapshot is not a JSON object")
    return record

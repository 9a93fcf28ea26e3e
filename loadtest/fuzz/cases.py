"""Malformed inputs, by category: what one fuzz connection sends.

Each generator returns a :class:`Batch`: the encoding of the connection, the
``session.start`` it sends first (or none), and the frames. The categories are
the ones the issue names; :data:`CATEGORIES` gives each its share of the inputs.
Binary-frame cases are in :mod:`loadtest.fuzz.binary`, schema cases in
:mod:`loadtest.fuzz.schemas`, deep nesting in :mod:`loadtest.fuzz.nesting`, framing and
ordering cases in :mod:`loadtest.fuzz.sequences`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgpack

from loadtest.fuzz.fields import (
    BASE_MESSAGES,
    field_paths,
    renamed_key,
    replaced,
    string_paths,
)
from loadtest.fuzz.wire import OP_BINARY, OP_TEXT, Frame, binary, text

SESSION_START: dict[str, Any] = {"type": "session.start", "settings": {"tool_timeout_ms": 100}}
AUDIO_SESSION_START: dict[str, Any] = {
    "type": "session.start",
    "audio": {
        "sample_rate": 16000,
        "output": False,
        "turn_detection": {"type": "manual", "create_response": False},
    },
}


@dataclass(frozen=True, slots=True)
class FuzzContext:
    """What the cases point at: the trap HTTP server, the canary file, the frame limit."""

    trap_url: str
    canary_path: str
    max_frame_bytes: int


@dataclass(slots=True)
class Batch:
    """One connection's worth of malformed input."""

    category: str
    encoding: str = "json"
    session: dict[str, Any] | None = None
    frames: list[Frame] = field(default_factory=list)
    ends_connection: bool = False
    """The inputs are meant to make the server close (oversize, bad UTF-8, flood)."""
    response_wait_s: float = 0.0
    """Wait this long for every started response to end before closing (schemas run late)."""
    cancel_responses: bool = False
    """Cancel each response once it started (its cost is in starting it)."""
    scenario: str = ""
    """A multi-connection scenario run by the lane instead of ``frames``."""
    resume_attacks: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    """Request id -> what that frame broke (named in the report's examples)."""

    def label(self, message: dict[str, Any], what: str) -> dict[str, Any]:
        """Give ``message`` a request id of its own (unless its id is what is broken)."""
        if message.get("id") == "r":
            request_id = f"f{len(self.frames)}"
            message["id"] = request_id
            self.labels[request_id] = what
        return message

    def describe(self, request_id: Any = None) -> str:
        """What the frame with ``request_id`` broke, else the batch's first frame."""
        if isinstance(request_id, str) and request_id in self.labels:
            return f"{self.category}: {self.labels[request_id]}"
        first = self.frames[0].payload[:160] if self.frames else b""
        return f"{self.category} ({self.encoding}, {len(self.frames)} frames): {first!r}"

    @property
    def subprotocol(self) -> str:
        """The WebSocket subprotocol of the connection."""
        return f"wsserver.v1.{self.encoding}"


WRONG_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    2**63,
    -(2**63),
    10**30,
    float("inf"),
    float("nan"),
    "",
    "x",
    "\x00",
    [],
    [None],
    {},
    {"": None},
    {"type": "ping"},
)
SURROGATES = ("\ud800", "\udfff", "a\ud800b", "\udc00\ud800", "\ud800" * 64)
PLACEHOLDER = "\x01\x02\x03"
SURROGATE_UTF8 = b"\xed\xa0\x80"
INVALID_UTF8 = (b"\xff", b"\xc0\x80", SURROGATE_UTF8, b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80")


def frame_of(message: Any, encoding: str) -> Frame | None:
    """``message`` in the connection's encoding; ``None`` when msgpack cannot hold it."""
    if encoding == "json":
        return text(message)
    try:
        return binary(message)
    except (OverflowError, TypeError, ValueError):
        return None


def _session_for(kind: str) -> dict[str, Any] | None:
    """Messages after the handshake need a session to reach their handler."""
    return None if kind in ("session.start", "session.resume") else SESSION_START


def wrong_types(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Every field of one message type replaced by values of every wrong type."""
    kind = rng.choice(sorted(BASE_MESSAGES))
    encoding = rng.choice(("json", "msgpack"))
    base = BASE_MESSAGES[kind]
    batch = Batch("wrong_types", encoding, _session_for(kind))
    for path in field_paths(base):
        for value in rng.sample(WRONG_VALUES, 6):
            if path == ("type",) and value == "x":
                continue
            what = f"{kind} {'.'.join(map(str, path))} = {value!r:.60}"
            frame = frame_of(batch.label(replaced(base, path, value), what), encoding)
            if frame is not None:
                batch.frames.append(frame)
    batch.frames = batch.frames[:200]
    return batch


def _msgpack_with_surrogate(message: dict[str, Any]) -> bytes:
    # msgpack will not encode a lone surrogate; pack a same-length stand-in and swap
    # its UTF-8 bytes for the surrogate's (what a non-Python client can send).
    packed = msgpack.packb(message, use_bin_type=True)
    return packed.replace(PLACEHOLDER.encode(), SURROGATE_UTF8)


def lone_surrogates(rng: random.Random, ctx: FuzzContext) -> Batch:
    """A lone surrogate in every string field (and as a key) of one message type."""
    kind = rng.choice(sorted(BASE_MESSAGES))
    encoding = rng.choice(("json", "msgpack"))
    base = BASE_MESSAGES[kind]
    batch = Batch("lone_surrogates", encoding, _session_for(kind))
    paths = string_paths(base)
    keys = [p for p in field_paths(base) if isinstance(p[-1], str) and p != ("type",)]
    for surrogate in SURROGATES:
        for path in paths:
            what = f"{kind} {'.'.join(map(str, path))} = {surrogate!r:.20}"
            if encoding == "json":
                batch.frames.append(text(batch.label(replaced(base, path, surrogate), what)))
            elif surrogate == SURROGATES[0]:
                message = batch.label(replaced(base, path, PLACEHOLDER), what)
                payload = _msgpack_with_surrogate(message)
                batch.frames.append(Frame(OP_BINARY, payload))
        for path in rng.sample(keys, min(2, len(keys))):
            if encoding == "json":
                batch.frames.append(text(renamed_key(base, path, surrogate)))
            elif surrogate == SURROGATES[0]:
                payload = _msgpack_with_surrogate(renamed_key(base, path, PLACEHOLDER))
                batch.frames.append(Frame(OP_BINARY, payload))
    return batch


def invalid_json(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Text frames that are not JSON, or JSON that is not a message object."""
    fixed = [
        "",
        " ",
        "{",
        "}",
        "[",
        "null",
        "1",
        '"x"',
        "[]",
        "{'type':'ping'}",
        '{"type":"ping",}',
        '{"type":"ping"}{"type":"ping"}',
        '{"type":"ping"} x',
        "NaN",
        '{"type":"ping","id":NaN}',
        '{"type":"ping","id":"\\x"}',
        '{"type":"ping","id":"\\u12"}',
        '{"type":"ack","seq":1e400}',
        '{"type":"ack","seq":' + "9" * 5000 + "}",
        '{"type":"ping","type":"session.start"}',
        '{"type":"ping","id":"a\\u0000b"}',
        "\ufeff" + '{"type":"ping"}',
        '{"type":"ping"}' + " " * 1000,
    ]
    batch = Batch("invalid_json", "json", rng.choice((None, SESSION_START)))
    for _ in range(120):
        if rng.random() < 0.5:
            payload = rng.choice(fixed).encode()
        else:
            junk = "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(1, 64)))
            payload = junk.encode()
        batch.frames.append(Frame(OP_TEXT, payload))
    return batch


def truncated(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Valid messages of every type cut short, as JSON and as msgpack."""
    encoding = rng.choice(("json", "msgpack"))
    batch = Batch("truncated", encoding, rng.choice((None, SESSION_START)))
    for _ in range(120):
        message = BASE_MESSAGES[rng.choice(sorted(BASE_MESSAGES))]
        if encoding == "json":
            whole = json.dumps(message).encode()
            batch.frames.append(Frame(OP_TEXT, whole[: rng.randrange(1, len(whole))]))
        else:
            whole = msgpack.packb(message, use_bin_type=True)
            batch.frames.append(Frame(OP_BINARY, whole[: rng.randrange(1, len(whole))]))
    return batch


def invalid_utf8(rng: random.Random, ctx: FuzzContext) -> Batch:
    """A text frame that is not UTF-8 (the server must close, with a code)."""
    whole = json.dumps({"type": "ping", "id": "ab"}).encode()
    cut = whole.index(b"ab") + 1
    bad = rng.choice(INVALID_UTF8)
    frames = [Frame(OP_TEXT, whole[:cut] + bad + whole[cut:])]
    if rng.random() < 0.3:  # split across fragments, the bad byte in the second one
        payload = frames[0].payload
        frames = [Frame(OP_TEXT, payload[:cut], fin=False), Frame(0, payload[cut:])]
    return Batch("invalid_utf8", "json", rng.choice((None, SESSION_START)), frames, True)


def unknown_types(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Types that do not exist, are not strings, or are missing."""
    encoding = rng.choice(("json", "msgpack"))
    batch = Batch("unknown_types", encoding, rng.choice((None, SESSION_START)))
    names: list[Any] = [
        "",
        "PING",
        "ping ",
        " ping",
        "session",
        "response.done",
        "error",
        "session.ready",
        "heartbeat",
        "x" * 1000,
        "ping\x00",
        1,
        1.5,
        True,
        [],
        {},
        ["ping"],
        {"type": "ping"},
    ]
    for _ in range(80):
        message: dict[str, Any] = {"id": "r"}
        if rng.random() < 0.9:
            message["type"] = rng.choice(names)
        frame = frame_of(message, encoding)
        if frame is not None:
            batch.frames.append(frame)
    return batch


def huge_strings(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Strings near and over the frame limit, and over each field's own limit."""
    limit = ctx.max_frame_bytes
    encoding = rng.choice(("json", "msgpack"))
    over = rng.random() < 0.25
    size = limit + rng.randrange(1, 4096) if over else rng.randrange(limit // 2, limit - 200)
    path = rng.choice(
        (("id",), ("text",), ("input",), ("instructions",), ("error",), ("output",), ("type",))
    )
    kind = {"text": "input.text", "input": "response.create", "instructions": "session.start"}
    kind |= {"error": "tool.result", "output": "tool.result"}
    message = dict(BASE_MESSAGES[kind.get(str(path[0]), "ping")])
    message[str(path[0])] = "a" * size
    frame = frame_of(message, encoding)
    assert frame is not None
    session = _session_for(str(message["type"]))
    frames = [frame]
    if not over:
        # Just over each field's own limit, many times: cheap and answered in-band.
        for name, length in (("id", 129), ("instructions", 100_001), ("error", 4097)):
            kind_name = "session.start" if name == "instructions" else "tool.result"
            if name == "id":
                kind_name = "ping"
            small = dict(BASE_MESSAGES[kind_name])
            small[name] = "b" * length
            extra = frame_of(small, encoding)
            if extra is not None:
                frames.append(extra)
    return Batch("huge_strings", encoding, session, frames, ends_connection=over)


def unknown_tool_call(rng: random.Random, ctx: FuzzContext) -> Batch:
    """``tool.result`` for calls the session never made."""
    encoding = rng.choice(("json", "msgpack"))
    batch = Batch("unknown_tool_call", encoding, SESSION_START)
    for _ in range(60):
        message = {
            "type": "tool.result",
            "call_id": rng.choice(("c", "call_1", f"call_{rng.randrange(10**12):016x}", "x" * 128)),
            "output": rng.choice((None, 1, "s", [1, 2], {"k": {"v": None}})),
        }
        if rng.random() < 0.3:
            message["error"] = "failed"
        frame = frame_of(message, encoding)
        if frame is not None:
            batch.frames.append(frame)
    return batch


CaseMaker = Callable[[random.Random, FuzzContext], Batch]

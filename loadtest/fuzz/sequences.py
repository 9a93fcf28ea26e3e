"""Inputs that are well formed one by one but not together: order, floods, bad framing."""

from __future__ import annotations

import random
import struct

from loadtest.fuzz.cases import SESSION_START, Batch, FuzzContext, frame_of
from loadtest.fuzz.fields import BASE_MESSAGES
from loadtest.fuzz.wire import OP_BINARY, OP_CLOSE, OP_CONT, OP_PING, OP_TEXT, Frame, text

_NEEDS_SESSION = (
    "tool.result",
    "response.create",
    "input.text",
    "ack",
    "response.interrupt",
    "response.cancel",
    "response.continue",
    "output_audio.played",
    "session.update",
    "input_audio.commit",
    "input_audio.clear",
)


def out_of_order(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Messages before their session, twice, or about things that do not exist."""
    encoding = rng.choice(("json", "msgpack"))
    if rng.random() < 0.5:
        # No session yet: everything but start/resume is refused, then a resume of nothing.
        batch = Batch("out_of_order", encoding, None)
        messages = [BASE_MESSAGES[k] for k in _NEEDS_SESSION]
        messages += [
            {"type": "session.resume", "session_id": "nope", "resume_token": "x", "last_seq": 0},
            {
                "type": "session.resume",
                "session_id": f"sess_{rng.randrange(10**9)}",
                "resume_token": "t",
                "last_seq": 10**6,
            },
        ]
    else:
        batch = Batch("out_of_order", encoding, SESSION_START, response_wait_s=3.0)
        messages = [
            {"type": "session.start"},
            {"type": "session.start", "id": "again"},
            BASE_MESSAGES["session.resume"],
            {"type": "response.interrupt"},
            {"type": "response.cancel"},
            {"type": "response.continue", "response_id": "resp_99"},
            {"type": "ack", "seq": 10**9},
            {"type": "output_audio.played", "response_id": "resp_1", "played_ms": 5},
            {"type": "input_audio.commit"},
            {"type": "input_audio.clear"},
            {"type": "tool.result", "call_id": "call_none", "output": 1},
            {"type": "response.create"},
            {"type": "response.create", "input": "a", "id": "dup"},
            {"type": "response.create", "input": "b", "id": "dup"},
            {"type": "response.continue", "response_id": "resp_1"},
            {"type": "response.interrupt", "response_id": "resp_7", "rendered_chars": 10**12},
            {"type": "response.create", "input": "c"},
            {"type": "response.cancel", "response_id": "resp_1"},
        ]
    for message in messages:
        frame = frame_of(message, encoding)
        if frame is not None:
            batch.frames.append(frame)
    return batch


def resume_attack(rng: random.Random, ctx: FuzzContext) -> Batch:
    """A real session, then other connections resuming it wrongly (the lane runs it)."""
    tokens = ["", "x", "tok", "A" * 256, "\ud800", None, 1]
    attacks: list[dict[str, object]] = []
    for token in rng.sample(tokens, 4):
        attacks.append({"resume_token": token, "last_seq": 0})
    attacks.append({"resume_token": "RIGHT", "last_seq": 10**6})
    attacks.append({"resume_token": "RIGHT", "last_seq": -1})
    attacks.append({"resume_token": "RIGHT", "last_seq": 0})  # takes the session over: 4002
    return Batch(
        "out_of_order",
        rng.choice(("json", "msgpack")),
        SESSION_START,
        scenario="resume_attack",
        resume_attacks=attacks,
    )


def flood(rng: random.Random, ctx: FuzzContext) -> Batch:
    """More messages at once than the burst allows (4005), or WebSocket pings (no limit)."""
    encoding = rng.choice(("json", "msgpack"))
    what = rng.choice(("ping", "invalid", "ws_ping"))
    count = rng.randrange(450, 900)
    if what == "ws_ping":
        frames = [Frame(OP_PING, b"p" * 125) for _ in range(count * 2)]
        return Batch("flood", encoding, rng.choice((None, SESSION_START)), frames)
    if what == "ping":
        frame = frame_of({"type": "ping", "id": "f"}, encoding)
    else:
        frame = Frame(OP_TEXT, b"{{") if encoding == "json" else Frame(OP_BINARY, b"\xc1")
    assert frame is not None
    batch = Batch("flood", encoding, rng.choice((None, SESSION_START)), [frame] * count)
    batch.ends_connection = True
    return batch


def ws_frames(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Frames that break RFC 6455 itself (the WebSocket library must close with a code)."""
    ping = text({"type": "ping"}).payload
    cases = [
        [Frame(OP_TEXT, ping, masked=False)],
        [Frame(OP_TEXT, ping, rsv=4)],
        [Frame(rng.choice((3, 4, 5, 6, 7, 0xB, 0xC, 0xF)), b"x")],
        [Frame(OP_PING, b"p" * 126)],
        [Frame(OP_PING, b"p", fin=False)],
        [Frame(OP_CONT, b"x")],
        [Frame(OP_TEXT, b'{"ty', fin=False), Frame(OP_TEXT, b'pe":"ping"}')],
        [Frame(OP_CLOSE, struct.pack("!H", rng.choice((999, 1004, 1005, 1006, 1015, 5000))))],
        [Frame(OP_CLOSE, b"\x03")],
        [Frame(OP_CLOSE, struct.pack("!H", 1000) + b"\xff\xfe")],
        [
            Frame(OP_TEXT, b'{"type":', fin=False),
            Frame(OP_PING, b"mid"),
            Frame(OP_CONT, b'"ping"}'),
        ],
    ]
    frames = rng.choice(cases)
    # The interleaved ping is legal: that case should be answered, not closed.
    legal = frames is cases[-1]
    return Batch("ws_frames", "json", rng.choice((None, SESSION_START)), frames, not legal)

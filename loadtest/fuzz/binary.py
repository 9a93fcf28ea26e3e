"""Binary-frame cases: msgpack values JSON has no place for, and malformed audio frames."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgpack

from loadtest.fuzz.cases import AUDIO_SESSION_START, SESSION_START, Batch, FuzzContext
from loadtest.fuzz.fields import BASE_MESSAGES
from loadtest.fuzz.wire import OP_BINARY, OP_TEXT, Frame, text
from protocol.audio_frame import HEADER


def msgpack_types(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Bytes, ext types, timestamps and non-string keys where JSON values belong."""
    odd: list[Any] = [
        b"\x00\xff",
        msgpack.ExtType(5, b"xx"),
        msgpack.Timestamp(1, 0),
        {b"k": 1},
        {1: 2},
        {None: 1},
        [b"x", {b"y": msgpack.ExtType(1, b"")}],
        bytearray(b"z"),
    ]
    batch = Batch("msgpack_types", "msgpack", SESSION_START)
    for _ in range(60):
        value = rng.choice(odd)
        where = rng.choice(("output", "output_nested", "id", "call_id", "type", "key", "error"))
        message: dict[Any, Any] = dict(BASE_MESSAGES["tool.result"])
        message["call_id"] = f"call_{rng.randrange(10**9)}"
        if where == "output_nested":
            message["output"] = {"a": [value]}
        elif where == "key":
            message = {b"type": "ping"} if rng.random() < 0.5 else {**message, b"x": 1}
        else:
            message[where] = value
        try:
            payload = msgpack.packb(message, use_bin_type=True, strict_types=False)
        except (TypeError, ValueError):
            continue
        batch.frames.append(Frame(OP_BINARY, payload))
    # A str that is not UTF-8, and frames that are not maps.
    batch.frames.append(Frame(OP_BINARY, b"\x82\xa4type\xa4ping\xa2id\xa1\xff"))
    for raw in (b"\x90", b"\xc1", b"\xa4ping", b"\x93\x01\x02\x03", b"\xcb" + b"\0" * 8):
        batch.frames.append(Frame(OP_BINARY, raw))
    return batch


def _audio(kind: int, flags: int, reserved: int, stream: int, seq: int, payload: bytes) -> Frame:
    return Frame(OP_BINARY, HEADER.pack(kind, flags, reserved, stream, seq) + payload)


def binary_audio(rng: random.Random, ctx: FuzzContext) -> Batch:
    """Audio frames that are short, odd, flagged wrong, out of order or out of pace."""
    encoding = rng.choice(("json", "msgpack"))
    session = rng.choice((AUDIO_SESSION_START, SESSION_START, None))
    batch = Batch("binary_audio", encoding, session)
    chunk = b"\x00\x01" * 320  # 20 ms at 16 kHz
    makers: list[Callable[[int], Frame]] = [
        lambda i: Frame(OP_BINARY, b"\x01"),
        lambda i: Frame(OP_BINARY, b"\x01" + b"\x00" * 14),
        lambda i: _audio(1, 0xFE, 0, 1, i, chunk),
        lambda i: _audio(1, 0, 7, 1, i, chunk),
        lambda i: _audio(1, 0, 0, 1, i, chunk + b"\x00"),
        lambda i: _audio(2, 0, 0, 1, i, chunk),
        lambda i: _audio(1, 0, 0, 1, i, b""),
        lambda i: _audio(1, 0, 0, 1, i, b"\x00" * 32),
        lambda i: _audio(1, 0, 0, 1, i, b"\x00" * 160_000),
        lambda i: _audio(1, 0, 0, 2**32 - 1, 2**64 - 1, chunk),
        lambda i: _audio(1, 0, 0, 1, rng.randrange(2**63), chunk),
        lambda i: _audio(1, 1, 0, 1, i, chunk),
        lambda i: _audio(1, 0, 0, 1, i, chunk),
        lambda i: Frame(OP_BINARY, b"\x80"),
        lambda i: Frame(OP_TEXT, b'{"type":"ping"}'),
        lambda i: text({"type": "input_audio.commit"}),
        lambda i: text(
            {"type": "output_audio.played", "response_id": "resp_9", "played_ms": 10**15}
        ),
    ]
    for index in range(100):
        batch.frames.append(rng.choice(makers)(index))
    return batch

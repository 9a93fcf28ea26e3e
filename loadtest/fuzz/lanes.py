"""Fuzz lanes: many connections at once, each sending one batch of bad input, then judged.

A lane opens a connection, starts a session when the batch needs one, sends
the batch, waits for the responses it started to end, checks the connection
still answers a ``ping`` (bad input gets an in-band error and the session goes
on) unless the batch was meant to close it, closes, and tallies how the
connection ended. Categories are scheduled by deficit: the next batch is of the
category furthest below its share of the inputs.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loadtest.fuzz.binary import binary_audio, msgpack_types
from loadtest.fuzz.cases import (
    Batch,
    CaseMaker,
    FuzzContext,
    frame_of,
    huge_strings,
    invalid_json,
    invalid_utf8,
    lone_surrogates,
    truncated,
    unknown_tool_call,
    unknown_types,
    wrong_types,
)
from loadtest.fuzz.nesting import deep_nesting
from loadtest.fuzz.schemas import schema_huge, schema_remote_ref, schema_self_ref
from loadtest.fuzz.sequences import flood, out_of_order, resume_attack, ws_frames
from loadtest.fuzz.wire import FuzzConnection, HandshakeRefused, open_fuzz_connection
from protocol.codes import CLOSE_CODES

CATEGORIES: dict[str, tuple[float, CaseMaker]] = {
    "wrong_types": (18.0, wrong_types),
    "lone_surrogates": (12.0, lone_surrogates),
    "invalid_json": (10.0, invalid_json),
    "truncated": (10.0, truncated),
    "flood": (8.0, flood),
    "binary_audio": (8.0, binary_audio),
    "msgpack_types": (7.0, msgpack_types),
    "unknown_types": (6.0, unknown_types),
    "unknown_tool_call": (6.0, unknown_tool_call),
    "deep_nesting": (4.0, deep_nesting),
    "out_of_order": (4.0, out_of_order),
    "invalid_utf8": (2.0, invalid_utf8),
    "schema_remote_ref": (1.0, schema_remote_ref),
    "schema_self_ref": (1.0, schema_self_ref),
    "ws_frames": (1.0, ws_frames),
    "huge_strings": (0.2, huge_strings),
    "schema_huge": (0.01, schema_huge),
}
"""Category -> (share of the inputs in percent, generator)."""

CONNECT_TIMEOUT_S = 10.0
READY_TIMEOUT_S = 10.0
PONG_TIMEOUT_S = 15.0
CLOSE_TIMEOUT_S = 5.0
DEFAULT_RESPONSE_WAIT_S = 10.0


@dataclass(slots=True)
class CategoryTally:
    """What one category's connections sent and saw."""

    inputs: int = 0
    connections: int = 0
    connect_failures: Counter[str] = field(default_factory=Counter)
    no_session_ready: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    server_closes: Counter[str] = field(default_factory=Counter)
    """Close codes the server chose (not the echo of a close we sent)."""
    lost_without_close: int = 0
    undocumented_closes: int = 0
    answered_after: int = 0
    """Connections that still answered a ping after the batch."""
    silent_after: int = 0
    """Connections that stayed open but did not answer that ping in time (a hang)."""
    closed_after: int = 0
    expected_close_missing: int = 0
    responses_started: int = 0
    responses_unterminated: int = 0
    responses_done_twice: int = 0
    canary_hits: int = 0
    undecodable_replies: int = 0
    close_unanswered: int = 0
    """Our close got no close frame back in time (counted in ``lost_without_close`` too)."""
    seconds: float = 0.0
    """Time the category's connections took, added up."""
    examples: dict[str, list[str]] = field(default_factory=dict)
    """Anomaly -> the first few inputs that caused it."""

    def example(self, anomaly: str, what: str) -> None:
        """Keep ``what`` as an example of ``anomaly`` (three of each, distinct)."""
        kept = self.examples.setdefault(anomaly, [])
        if len(kept) < 3 and what not in kept:
            kept.append(what)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (counters as plain dicts)."""
        return {
            name: dict(value) if isinstance(value, Counter | dict) else value
            for name, value in ((n, getattr(self, n)) for n in self.__slots__)  # type: ignore[attr-defined]
        }


@dataclass(slots=True)
class FuzzPlan:
    """Where and how hard to fuzz."""

    url: str
    inputs: int
    lanes: int
    deadline: float
    """``time.monotonic()`` after which no new batch starts."""
    headers: dict[str, str]
    context: FuzzContext
    canaries: tuple[bytes, ...]
    seed: int


class Scheduler:
    """Picks the category furthest below its share; counts planned inputs."""

    def __init__(self, plan: FuzzPlan) -> None:
        self.plan = plan
        self.planned: Counter[str] = Counter()
        self.sent = 0
        self.tallies = {name: CategoryTally() for name in CATEGORIES}

    def next_batch(self, rng: random.Random) -> Batch | None:
        """The next batch, or ``None`` when the input count or the time is reached."""
        if self.sent >= self.plan.inputs or time.monotonic() >= self.plan.deadline:
            return None
        name = min(CATEGORIES, key=lambda c: self.planned[c] / CATEGORIES[c][0])
        if name == "out_of_order" and rng.random() < 0.3:
            batch = resume_attack(rng, self.plan.context)
        else:
            batch = CATEGORIES[name][1](rng, self.plan.context)
        self.planned[name] += max(1, len(batch.frames) + len(batch.resume_attacks))
        return batch

    def count(self, category: str, n: int = 1) -> None:
        """Inputs actually written."""
        self.sent += n
        self.tallies[category].inputs += n


async def run_lanes(plan: FuzzPlan) -> Scheduler:
    """Run ``plan.lanes`` lanes until the inputs are sent or the deadline passed."""
    scheduler = Scheduler(plan)
    lanes = [
        asyncio.create_task(_lane(scheduler, random.Random(plan.seed * 1000 + i)))
        for i in range(plan.lanes)
    ]
    # A lane finishes its batch after the deadline (bounded by its own timeouts).
    slack = READY_TIMEOUT_S + DEFAULT_RESPONSE_WAIT_S + PONG_TIMEOUT_S + CLOSE_TIMEOUT_S + 15.0
    remaining = max(0.0, plan.deadline - time.monotonic()) + slack
    _, pending = await asyncio.wait(lanes, timeout=remaining)
    for task in pending:
        task.cancel()
    await asyncio.gather(*lanes, return_exceptions=True)
    for task in lanes:
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    return scheduler


async def _lane(scheduler: Scheduler, rng: random.Random) -> None:
    while (batch := scheduler.next_batch(rng)) is not None:
        tally = scheduler.tallies[batch.category]
        began = time.monotonic()
        if batch.scenario == "resume_attack":
            await _resume_attack(scheduler, batch, tally)
        else:
            await _one_batch(scheduler, batch, tally)
        tally.seconds = round(tally.seconds + time.monotonic() - began, 3)


async def _open(scheduler: Scheduler, batch: Batch, tally: CategoryTally) -> FuzzConnection | None:
    plan = scheduler.plan
    tally.connections += 1
    try:
        return await open_fuzz_connection(
            plan.url,
            subprotocol=batch.subprotocol,
            headers=plan.headers,
            timeout_s=CONNECT_TIMEOUT_S,
            canaries=plan.canaries,
        )
    except HandshakeRefused as refused:
        tally.connect_failures[refused.status_line[:60]] += 1
    except (OSError, TimeoutError) as exc:
        tally.connect_failures[type(exc).__name__] += 1
    await asyncio.sleep(0.2)  # a refusing or overloaded server: back off a little
    return None


async def _start_session(
    conn: FuzzConnection, batch: Batch, start: dict[str, Any], tally: CategoryTally
) -> dict[str, Any] | None:
    frame = frame_of(start, batch.encoding)
    assert frame is not None
    conn.send(frame)
    ready = await conn.wait_for(lambda m: m.get("type") == "session.ready", READY_TIMEOUT_S)
    if ready is None:
        tally.no_session_ready += 1
    return ready


async def _one_batch(scheduler: Scheduler, batch: Batch, tally: CategoryTally) -> None:
    conn = await _open(scheduler, batch, tally)
    if conn is None:
        return
    try:
        if batch.session is not None:
            await _start_session(conn, batch, batch.session, tally)
        for index, frame in enumerate(batch.frames):
            if not conn.send(frame):
                break
            scheduler.count(batch.category)
            if index % 32 == 31:
                await conn.drain()
                await asyncio.sleep(0)
        await _settle_responses(conn, batch)
        await _check_alive(conn, batch, tally)
    finally:
        await _finish(conn, tally, batch)


async def _settle_responses(conn: FuzzConnection, batch: Batch) -> None:
    if batch.cancel_responses:
        created = await conn.wait_for(lambda m: m.get("type") == "response.created", 10.0)
        if created is not None:
            cancel = frame_of({"type": "response.cancel"}, batch.encoding)
            assert cancel is not None
            conn.send(cancel)
    # Every response a batch started must end (its own wait, or a short default one).
    deadline = time.monotonic() + max(batch.response_wait_s, DEFAULT_RESPONSE_WAIT_S)
    # A response can start a moment after its request: give each request a beat first.
    await asyncio.sleep(0.05)
    while time.monotonic() < deadline and not conn.closed.done():
        if not conn.created - set(conn.done):
            return
        await conn.wait_for(
            lambda m: m.get("type") == "response.done", max(0.01, deadline - time.monotonic())
        )


async def _check_alive(conn: FuzzConnection, batch: Batch, tally: CategoryTally) -> None:
    if batch.ends_connection:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(conn.closed), CLOSE_TIMEOUT_S)
        if not conn.closed.done():
            tally.expected_close_missing += 1
        return
    ping = frame_of({"type": "ping", "id": "fuzz-end"}, batch.encoding)
    assert ping is not None
    if not conn.send(ping):
        tally.closed_after += 1
        return
    pong = await conn.wait_for(
        lambda m: m.get("type") == "pong" and m.get("request_id") == "fuzz-end", PONG_TIMEOUT_S
    )
    if pong is not None:
        tally.answered_after += 1
    elif conn.closed.done():
        tally.closed_after += 1
    else:
        tally.silent_after += 1
        tally.example("no pong after the batch", batch.describe())


async def _finish(conn: FuzzConnection, tally: CategoryTally, batch: Batch) -> None:
    await conn.close(CLOSE_TIMEOUT_S)
    judge_close(conn, tally, batch)


def judge_close(conn: FuzzConnection, tally: CategoryTally, batch: Batch) -> None:
    """Tally how a finished connection ended and what it received."""
    code = conn.close_code
    echo = conn.sent_close is not None and not conn.server_closed_first and code == conn.sent_close
    if code is not None and (conn.server_closed_first or not echo):
        tally.server_closes[str(code)] += 1
        if code not in CLOSE_CODES or code == 1006:
            tally.undocumented_closes += 1
            tally.example(f"close {code}", batch.describe())
    tally.close_unanswered += conn.close_unanswered
    if conn.lost_without_close:
        tally.lost_without_close += 1
        tally.undocumented_closes += 1
        tally.example("no close frame (1006)", batch.describe())
    for request_id in conn.internal_errors:
        tally.example("internal_error", batch.describe(request_id))
    for response_id in conn.created - set(conn.done):
        tally.example("response never ended", batch.describe(conn.created_by.get(response_id)))
    tally.errors.update(conn.error_codes)
    tally.responses_started += len(conn.created)
    tally.responses_unterminated += len(conn.created - set(conn.done))
    tally.responses_done_twice += sum(1 for n in conn.done.values() if n > 1)
    tally.canary_hits += conn.canary_hits
    tally.undecodable_replies += conn.undecodable


async def _resume_attack(scheduler: Scheduler, batch: Batch, tally: CategoryTally) -> None:
    """Open a real session, then resume it from other connections with wrong values."""
    owner = await _open(scheduler, batch, tally)
    if owner is None:
        return
    try:
        assert batch.session is not None
        ready = await _start_session(owner, batch, batch.session, tally)
        if ready is None:
            return
        for attack in batch.resume_attacks:
            token = attack["resume_token"]
            message = {
                "type": "session.resume",
                "session_id": ready.get("session_id"),
                "resume_token": ready.get("resume_token") if token == "RIGHT" else token,
                "last_seq": attack["last_seq"],
            }
            frame = frame_of(message, batch.encoding)
            if frame is None:
                continue
            thief = await _open(scheduler, batch, tally)
            if thief is None:
                continue
            try:
                thief.send(frame)
                scheduler.count(batch.category)
                await thief.wait_for(
                    lambda m: m.get("type") in ("session.ready", "error"), READY_TIMEOUT_S
                )
            finally:
                await _finish(thief, tally, batch)
    finally:
        await _finish(owner, tally, batch)

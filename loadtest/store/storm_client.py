"""Reconnect-storm client processes: stream, drop every connection at once, resume.

Each process opens its sessions on worker A, starts an answer in each, and at
the runner's ``drop_at`` aborts every TCP connection (no close frame: a network
handoff as the server sees it). At once every session opens a new connection
to the resume target (worker B, or A itself for the baseline) and sends
``session.resume`` with the highest ``seq`` it got. Every seq the session sees,
before and after, is kept so the runner can count lost and doubled events::

    client -> {"kind": "connected"}   runner -> {"kind": "go", "start", "drop_at", "end"}
    client -> {"kind": "resumed"}     (every resume answered or given up)
    client -> {"kind": "result"}      (after ``end``; sessions closed with 1000)
    runner -> {"kind": "recheck", "ids"}   client -> {"kind": "rechecked", "answers"}

The recheck resumes the ended sessions the runner still found in the store: after
a close with 1000 a resume must get ``unknown_session``.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from loadtest.common.clients import (
    ConnectPlan,
    close_sessions,
    open_sessions,
    receive_from_runner,
    run_client_process,
)
from loadtest.common.wire import LeanConnection, WireError, open_connection
from loadtest.store.storm_check import SessionCheck, check_session

# Refusals a client may retry (the store or the worker is busy), by error code.
RETRYABLE = frozenset({"store_unavailable", "overloaded", "rate_limited"})


@dataclass(frozen=True, slots=True)
class StormPlan:
    """One client process's share of the storm."""

    connect: ConnectPlan
    resume_url: str
    start_spread_s: float
    """Sessions send their first ``response.create`` at random within this span."""
    resume_attempts: int
    """Connection attempts per session (a refused or failed connect is retried)."""
    resume_timeout_s: float
    """Bound on one attempt: connect, handshake and ``session.ready`` (the SDK's 10 s)."""


@dataclass(slots=True)
class StormSession:
    """One session's view of the storm: identity, what it saw, when it came back."""

    connection: LeanConnection
    session_id: str
    resume_token: str
    seqs: list[int] = field(default_factory=list)
    """Every ``seq`` received, in arrival order, duplicates included."""
    prints: dict[int, int] = field(default_factory=dict)
    conflicts: int = 0
    """Seqs received twice with different content."""
    chars: Counter[str] = field(default_factory=Counter)
    """Text characters received per response id."""
    phase: str = "before"
    seqs_before: int = 0
    last_seq_sent: int = 0
    server_last_seq: int = 0
    dropped_at: float = 0.0
    ready_at: float | None = None
    attempts: int = 0
    refusal: str | None = None
    tokens_after: int = 0
    created_after: int = 0
    done_after: list[str] = field(default_factory=list)
    rewound_chars: int = 0
    lost_after_resume: bool = False
    follow_up_sent: bool = False
    ready: asyncio.Future[None] | None = None

    # -- receiving -----------------------------------------------------------

    def on_text(self, frame: str) -> None:
        """Any message on either connection."""
        message = json.loads(frame)
        kind = message.get("type")
        if self.phase == "resuming":
            self._on_resume_answer(kind, message)
            return
        seq = message.get("seq")
        if isinstance(seq, int) and not self._record(seq, message):
            return  # a duplicate reaches no application: it is only counted
        if kind == "response.text.delta":
            delta = str(message.get("delta", ""))
            self.chars[str(message.get("response_id"))] += len(delta)
            if self.phase == "after":
                self.tokens_after += len(delta.split())
        elif kind == "response.created" and self.phase == "after":
            self.created_after += 1
        elif kind == "response.done" and self.phase == "after":
            self._on_done_after(message)

    def _record(self, seq: int, message: dict[str, Any]) -> bool:
        """Keep the seq; ``True`` the first time it is seen."""
        self.seqs.append(seq)
        # The fingerprint leaves out nothing but framing: a replay must be the same event.
        fingerprint = zlib.crc32(json.dumps(message, sort_keys=True).encode())
        previous = self.prints.get(seq)
        if previous is None:
            self.prints[seq] = fingerprint
            return True
        if previous != fingerprint:
            self.conflicts += 1
        return False

    def _on_resume_answer(self, kind: Any, message: dict[str, Any]) -> None:
        assert self.ready is not None
        if kind == "session.ready":
            self.ready_at = time.monotonic()
            self.server_last_seq = int(message.get("last_seq", 0))
            self.phase = "after"
            if not self.ready.done():
                self.ready.set_result(None)
        elif kind == "error":
            self.refusal = str(message.get("code"))
            if not self.ready.done():
                self.ready.set_exception(ResumeRefusedError(self.refusal))

    def _on_done_after(self, message: dict[str, Any]) -> None:
        reason = message.get("reason")
        self.done_after.append(f"{message.get('status')}/{reason}" if reason else "completed")
        persisted = message.get("persisted_chars")
        if isinstance(persisted, int):
            seen = self.chars[str(message.get("response_id"))]
            self.rewound_chars += max(0, seen - persisted)
        if not self.follow_up_sent:
            # A new answer on the new owner proves the session works after the storm.
            self.follow_up_sent = True
            self.connection.send_text(json.dumps({"type": "response.create", "input": "again"}))

    def on_lost(self) -> None:
        """The resumed connection dropped before the end."""
        if self.phase == "after":
            self.lost_after_resume = True
        if self.ready is not None and not self.ready.done():
            self.ready.set_exception(ConnectionResetError("connection lost before session.ready"))

    # -- the storm -----------------------------------------------------------

    def start_answer(self) -> None:
        """The answer that will be streaming when the connection drops."""
        self.connection.send_text(json.dumps({"type": "response.create", "input": "storm"}))

    def drop(self) -> None:
        """Abort the TCP connection: no close frame, unread bytes are lost."""
        self.connection.on_text = _ignore
        self.connection.on_lost = _nothing
        self.seqs_before = len(self.seqs)
        self.last_seq_sent = max(self.seqs, default=0)
        self.dropped_at = time.monotonic()
        if self.connection.transport is not None:
            self.connection.transport.abort()

    async def resume(self, plan: StormPlan, deadline: float) -> None:
        """New connection, ``session.resume``; retry failed connects and retryable refusals."""
        url = plan.resume_url
        for attempt in range(plan.resume_attempts):
            self.attempts = attempt + 1
            until = min(deadline, time.monotonic() + plan.resume_timeout_s)
            remaining = until - time.monotonic()
            if remaining <= 0:
                break
            self.phase = "resuming"
            self.ready = asyncio.get_running_loop().create_future()
            try:
                connection = await open_connection(url, remaining)
            except (OSError, TimeoutError, WireError) as exc:
                self.refusal = f"connect: {type(exc).__name__}"
                await asyncio.sleep(min(0.05 * 2**attempt, 1.0) * random.uniform(0.5, 1.5))
                continue
            self.connection = connection
            connection.first_text.cancel()  # this session reads every message itself
            connection.on_text = self.on_text
            connection.on_lost = self.on_lost
            connection.send_text(
                json.dumps(
                    {
                        "type": "session.resume",
                        "session_id": self.session_id,
                        "resume_token": self.resume_token,
                        "last_seq": self.last_seq_sent,
                    }
                )
            )
            try:
                await asyncio.wait_for(asyncio.shield(self.ready), until - time.monotonic())
                self.refusal = None
                return
            except ResumeRefusedError as exc:
                if str(exc) not in RETRYABLE:
                    return
            except (OSError, TimeoutError):
                self.refusal = self.refusal or "no answer"
            connection.on_text = _ignore
            connection.on_lost = _nothing
            if connection.transport is not None:
                connection.transport.abort()
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0) * random.uniform(0.5, 1.5))

    def check(self) -> SessionCheck:
        """Lost, doubled and conflicting events, before and after the drop."""
        return check_session(self.seqs, self.seqs_before, self.conflicts, self.server_last_seq)


class ResumeRefusedError(Exception):
    """The server answered ``session.resume`` with an error (its code is the message)."""


def _ignore(frame: str) -> None:
    """Text handler of a connection that no longer counts."""


def _nothing() -> None:
    """Loss handler of a connection that no longer counts."""


# -- process -------------------------------------------------------------------


async def _sleep_until(moment: float) -> None:
    await asyncio.sleep(max(0.0, moment - time.monotonic()))


async def _storm_client(plan: StormPlan, pipe: Connection) -> None:
    connections, failures = await open_sessions(plan.connect)
    sessions = []
    for connection in connections:
        ready = json.loads(connection.first_text.result())
        session = StormSession(connection, str(ready["session_id"]), str(ready["resume_token"]))
        connection.on_text = session.on_text
        sessions.append(session)
    pipe.send({"kind": "connected", "sessions": len(sessions), "failures": dict(failures)})
    go = await receive_from_runner(pipe, "go")
    loop = asyncio.get_running_loop()
    for session in sessions:
        delay = max(0.0, go["start"] - time.monotonic()) + random.uniform(0, plan.start_spread_s)
        loop.call_later(delay, session.start_answer)
    await _sleep_until(go["drop_at"])
    for session in sessions:
        session.drop()
    await asyncio.gather(*(s.resume(plan, go["end"]) for s in sessions))
    pipe.send({"kind": "resumed", "at": time.monotonic()})
    await _sleep_until(go["end"])
    for session in sessions:
        session.connection.on_lost = _nothing
    resumed = [s.connection for s in sessions if s.ready_at is not None]
    await close_sessions(resumed, timeout_s=5.0)
    pipe.send({"kind": "result", **_tally(sessions)})
    recheck = await receive_from_runner(pipe, "recheck")
    wanted = set(recheck["ids"])
    answers = await asyncio.gather(
        *(_resume_ended(s, plan.resume_url) for s in sessions if s.session_id in wanted)
    )
    pipe.send({"kind": "rechecked", "answers": dict(Counter(answers))})


async def _resume_ended(session: StormSession, url: str, timeout_s: float = 5.0) -> str:
    """Resume a session that was ended with 1000; the answer's type or error code."""
    try:
        connection = await open_connection(url, timeout_s)
    except (OSError, TimeoutError, WireError) as exc:
        return f"connect: {type(exc).__name__}"
    connection.first_text.cancel()
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def on_text(frame: str) -> None:
        if not answer.done():
            message = json.loads(frame)
            answer.set_result(str(message.get("code") or message.get("type")))

    connection.on_text = on_text
    connection.send_text(
        json.dumps(
            {
                "type": "session.resume",
                "session_id": session.session_id,
                "resume_token": session.resume_token,
                "last_seq": max(session.seqs, default=0),
            }
        )
    )
    try:
        return await asyncio.wait_for(answer, timeout_s)
    except TimeoutError:
        return "no answer"
    finally:
        await connection.close(2.0)  # 1000 again: a resurrected session is ended at once


def _tally(sessions: list[StormSession]) -> dict[str, Any]:
    checks = [s.check() for s in sessions]
    done: Counter[str] = Counter(d for s in sessions for d in s.done_after)
    refusals: Counter[str] = Counter(s.refusal for s in sessions if s.refusal)
    return {
        "sessions": len(sessions),
        "resumed": sum(1 for s in sessions if s.ready_at is not None),
        "ready_ms": [(s.ready_at - s.dropped_at) * 1000 for s in sessions if s.ready_at],
        "attempts": dict(Counter(s.attempts for s in sessions)),
        "refusals": dict(refusals),
        "events_before": sum(s.seqs_before for s in sessions),
        "events_after": sum(len(s.seqs) - s.seqs_before for s in sessions),
        "replayed": sum(c.replayed for c in checks),
        "lost": sum(c.lost for c in checks),
        "lost_at_resume": sum(c.lost_at_resume for c in checks),
        "doubled": sum(c.doubled for c in checks),
        "conflicting": sum(c.conflicting for c in checks),
        "out_of_order": sum(c.out_of_order for c in checks),
        "sessions_with_loss": sum(1 for c in checks if c.lost),
        "sessions_with_doubles": sum(1 for c in checks if c.doubled),
        "examples": [
            {"session_id": s.session_id, **c.to_dict()}
            for s, c in zip(sessions, checks, strict=True)
            if c.lost or c.doubled or c.conflicting or c.out_of_order
        ][:5],
        "done_after": dict(done),
        "rewound_sessions": sum(1 for s in sessions if s.rewound_chars),
        "rewound_chars": sum(s.rewound_chars for s in sessions),
        "streaming_after": sum(1 for s in sessions if s.tokens_after),
        "follow_up_created": sum(1 for s in sessions if s.created_after),
        "tokens_after": sum(s.tokens_after for s in sessions),
        "lost_after_resume": sum(1 for s in sessions if s.lost_after_resume),
        "server_ahead": sum(1 for s in sessions if s.server_last_seq > s.last_seq_sent),
        # Closed with 1000 on the new connection: these sessions must be gone for good.
        "ended_ids": [s.session_id for s in sessions if s.ready_at is not None],
    }


def storm_client_main(plan: StormPlan, pipe: Connection) -> None:
    """Process entry point of a storm client."""
    run_client_process(_storm_client(plan, pipe), pipe)

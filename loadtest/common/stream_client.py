"""The streaming client process: back-to-back answers, interrupts and pings, tallied.

It talks to the runner as :mod:`loadtest.common.clients` describes::

    client -> {"kind": "connected"}   runner -> {"kind": "go", "start", "end"}
    client -> {"kind": "result", ...}
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from loadtest.common.clients import (
    ConnectPlan,
    Window,
    close_sessions,
    open_sessions,
    receive_from_runner,
    run_client_process,
)
from loadtest.common.wire import LeanConnection

INTERRUPT = json.dumps({"type": "response.interrupt"})
# Both servers write compact JSON with "type" first, so a delta is recognised
# without parsing it: at 50,000 frames/s the client's CPU is part of the budget.
DELTA_PREFIX = '{"type":"response.text.delta"'
DELTA_FIELD = '"delta":"'


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """What each streaming session does once the run starts."""

    connect: ConnectPlan
    first_index: int
    """Index of this process's first session across all client processes (staggering)."""
    interrupt_every: int
    """Every n-th response of a session is interrupted (0: never)."""
    interrupt_after: int
    """Tokens received before the interrupt is sent."""
    interrupt_jitter_s: float
    """The interrupt goes out a random 0..jitter seconds after that token (one decode step)."""
    start_spread_s: float
    """Sessions start their first answer at random within this span, so they do not
    run in lockstep (which would turn every interrupt into a burst of them)."""
    ping_interval_s: float
    drain_s: float
    """After the window ends, how long to wait for answers still owed."""


@dataclass(slots=True)
class StreamTally:
    """What one client process observed inside the window."""

    tokens: int = 0
    frames: int = 0
    interrupt_ms: list[float] = field(default_factory=list)
    ping_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    unanswered_interrupts: int = 0
    unanswered_pings: int = 0
    dropped_sessions: int = 0


def delta_tokens(frame: str) -> int:
    """Tokens in a delta frame: both servers send space-separated words, one per token."""
    start = frame.find(DELTA_FIELD) + len(DELTA_FIELD)
    return len(frame[start : frame.index('"', start)].split())


class StreamDriver:
    """One session: back-to-back responses, some interrupted, pings on the side.

    Everything runs in the connection's callbacks, synchronously: no task and
    no await per frame.
    """

    def __init__(
        self,
        connection: LeanConnection,
        index: int,
        plan: StreamPlan,
        window: Window,
        tally: StreamTally,
    ) -> None:
        self.connection = connection
        self.index = index
        self.plan = plan
        self.window = window
        self.tally = tally
        self.responses = 0
        self.received = 0
        self.streaming = False
        self.interrupt_at = 0
        self.interrupt_sent_at: float | None = None
        self.pings: dict[str, float] = {}
        self.ping_count = 0
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Take over the connection and ask for the first answer."""
        self.connection.on_text = self.on_text
        self.connection.on_lost = self.on_lost
        loop = asyncio.get_running_loop()
        if self.plan.ping_interval_s > 0:
            delay = random.uniform(0, self.plan.ping_interval_s)
            self._timer = loop.call_later(delay, self._ping)
        loop.call_later(random.uniform(0, self.plan.start_spread_s), self._create)

    def on_text(self, frame: str) -> None:
        """One message from the server."""
        if frame.startswith(DELTA_PREFIX):
            self._on_delta(frame)
        else:
            self._on_message(json.loads(frame))
        if self.window.ended and not self._owed():
            self.finish()

    def on_lost(self) -> None:
        """The connection dropped."""
        if not self.window.ended:
            self.tally.dropped_sessions += 1
        self.finish()

    def count_unanswered(self) -> None:
        """Add what this session still waited for (sent inside the window) to the tally."""
        window = self.window
        sent = self.interrupt_sent_at
        if sent is not None and window.start <= sent < window.end:
            self.tally.unanswered_interrupts += 1
        self.tally.unanswered_pings += sum(
            1 for sent in self.pings.values() if window.start <= sent < window.end
        )
        self.pings.clear()
        self.interrupt_sent_at = None

    def finish(self) -> None:
        """Stop: ignore further frames, cancel the ping timer (idempotent)."""
        if self.finished.done():
            return
        self.finished.set_result(None)
        self.connection.on_text = _ignore
        if self._timer is not None:
            self._timer.cancel()

    def _owed(self) -> bool:
        return self.interrupt_sent_at is not None or bool(self.pings)

    def _create(self) -> None:
        if self.finished.done():
            return
        self.responses += 1
        self.received = 0
        self.streaming = True
        every = self.plan.interrupt_every
        interrupt = every > 0 and (self.responses + self.index) % every == 0
        self.interrupt_at = self.plan.interrupt_after if interrupt else 0
        self.connection.send_text(
            json.dumps({"type": "response.create", "input": f"question {self.responses}"})
        )

    def _on_delta(self, frame: str) -> None:
        tokens = delta_tokens(frame)
        self.received += tokens
        if self.window.measuring:
            self.tally.tokens += tokens
            self.tally.frames += 1
        if self.interrupt_at and self.received >= self.interrupt_at:
            self.interrupt_at = 0
            # A random phase against the decode clock, as a user's barge-in would have.
            delay = random.uniform(0, self.plan.interrupt_jitter_s)
            asyncio.get_running_loop().call_later(delay, self._interrupt, self.responses)

    def _interrupt(self, response: int) -> None:
        if self.finished.done() or not self.streaming or response != self.responses:
            return
        self.interrupt_sent_at = time.monotonic()
        self.connection.send_text(INTERRUPT)

    def _on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "pong":
            self._on_pong(str(message.get("request_id")))
        elif kind == "response.done":
            self._on_done(message)
        elif kind == "error" and self._in_window(time.monotonic()):
            self.tally.errors[str(message.get("code"))] += 1

    def _on_pong(self, request_id: str) -> None:
        sent = self.pings.pop(request_id, None)
        if sent is not None and self._in_window(sent):
            self.tally.ping_ms.append((time.monotonic() - sent) * 1000.0)

    def _on_done(self, message: dict[str, Any]) -> None:
        now = time.monotonic()
        self.streaming = False
        sent = self.interrupt_sent_at
        self.interrupt_sent_at = None
        if sent is not None and self._in_window(sent):
            self.tally.interrupt_ms.append((now - sent) * 1000.0)
        if self._in_window(now):
            self.tally.statuses[str(message.get("status"))] += 1
        if not self.window.ended:
            self._create()

    def _in_window(self, t: float) -> bool:
        return self.window.start <= t < self.window.end

    def _ping(self) -> None:
        if self.window.ended or self.finished.done():
            return
        self.ping_count += 1
        ping_id = f"p{self.ping_count}"
        self.pings[ping_id] = time.monotonic()
        self.connection.send_text(json.dumps({"type": "ping", "id": ping_id}))
        self._timer = asyncio.get_running_loop().call_later(self.plan.ping_interval_s, self._ping)


def _ignore(frame: str) -> None:
    """Text handler of a finished session: the rest of the stream is not measured."""


async def _flip_window(window: Window) -> None:
    await asyncio.sleep(max(0.0, window.start - time.monotonic()))
    window.measuring = True
    await asyncio.sleep(max(0.0, window.end - time.monotonic()))
    window.measuring = False
    window.ended = True


async def _drive(sessions: list[LeanConnection], plan: StreamPlan, window: Window) -> StreamTally:
    tally = StreamTally()
    drivers = [
        StreamDriver(c, plan.first_index + i, plan, window, tally) for i, c in enumerate(sessions)
    ]
    for driver in drivers:
        driver.start()
    await _flip_window(window)
    # Drivers finish once nothing they sent in the window is still owed an answer.
    finished = [d.finished for d in drivers]
    if finished:
        timeout = max(0.1, window.end + plan.drain_s - time.monotonic())
        await asyncio.wait(finished, timeout=timeout)
    for driver in drivers:
        driver.count_unanswered()
        driver.finish()
    return tally


async def _stream_client(plan: StreamPlan, pipe: Connection) -> None:
    sessions, failures = await open_sessions(plan.connect)
    pipe.send({"kind": "connected", "sessions": len(sessions), "failures": dict(failures)})
    go = await receive_from_runner(pipe, "go")
    tally = await _drive(sessions, plan, Window(go["start"], go["end"]))
    await close_sessions(sessions, timeout_s=5.0)
    pipe.send(
        {
            "kind": "result",
            "tokens": tally.tokens,
            "frames": tally.frames,
            "interrupt_ms": tally.interrupt_ms,
            "ping_ms": tally.ping_ms,
            "statuses": dict(tally.statuses),
            "errors": dict(tally.errors),
            "unanswered_interrupts": tally.unanswered_interrupts,
            "unanswered_pings": tally.unanswered_pings,
            "dropped_sessions": tally.dropped_sessions,
        }
    )


def stream_client_main(plan: StreamPlan, pipe: Connection) -> None:
    """Process entry point of a streaming client."""
    run_client_process(_stream_client(plan, pipe), pipe)

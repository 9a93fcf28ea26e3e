"""Idle round trips: sessions that only send ``ping`` and time each ``pong``.

A client process opens its sessions, reports ``connected``, waits for the
runner's ``go`` (window ``start``/``end``), then every session sends
``{"type":"ping","id":...}`` once per interval (a random phase per session) and
times the ``pong`` with the same ``request_id``. Nothing streams: what is
measured is the path itself (client -> [router ->] worker and back) with the
worker otherwise idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from loadtest.common.clients import (
    ConnectPlan,
    close_sessions,
    open_sessions,
    receive_from_runner,
    run_client_process,
)
from loadtest.common.wire import LeanConnection

PONG_PREFIX = '{"type":"pong"'


@dataclass(frozen=True, slots=True)
class PingPlan:
    """Which server to reach, how many sessions, how often each pings."""

    connect: ConnectPlan
    interval_s: float
    drain_s: float


@dataclass(slots=True)
class PingTally:
    """What one client process observed inside the window, and the pings still owed."""

    ping_ms: list[float] = field(default_factory=list)
    dropped_sessions: int = 0
    owed: int = 0
    ended: bool = False
    drained: asyncio.Event = field(default_factory=asyncio.Event)

    def answered(self) -> None:
        """One owed pong came (or will never come); wake the drain once none is owed."""
        self.owed -= 1
        if self.ended and not self.owed:
            self.drained.set()


class Pinger:
    """One session: a ping per interval, the pong timed, everything else ignored."""

    def __init__(
        self,
        connection: LeanConnection,
        plan: PingPlan,
        window: tuple[float, float],
        tally: PingTally,
    ) -> None:
        self.connection = connection
        self.plan = plan
        self.start, self.end = window
        self.tally = tally
        self.sent: dict[str, float] = {}
        self.count = 0
        self._timer: asyncio.TimerHandle | None = None

    def begin(self) -> None:
        """Take over the connection; the first ping at a random phase."""
        self.connection.on_text = self.on_text
        self.connection.on_lost = self.on_lost
        loop = asyncio.get_running_loop()
        self._timer = loop.call_at(
            _loop_time(self.start) + random.uniform(0, self.plan.interval_s), self._ping
        )

    def on_text(self, frame: str) -> None:
        """A pong (timed) or anything else (heartbeats: ignored)."""
        if not frame.startswith(PONG_PREFIX):
            return
        now = time.monotonic()
        sent = self.sent.pop(str(json.loads(frame).get("request_id")), None)
        if sent is not None:
            self.tally.ping_ms.append((now - sent) * 1000.0)
            self.tally.answered()

    def on_lost(self) -> None:
        """The connection dropped."""
        if time.monotonic() < self.end:
            self.tally.dropped_sessions += 1
        self.stop()
        for _ in range(len(self.sent)):
            self.tally.answered()  # never will be: counted unanswered, not waited for

    def stop(self) -> None:
        """No more pings."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _ping(self) -> None:
        now = time.monotonic()
        if now >= self.end:
            self._timer = None
            return
        self.count += 1
        ping_id = f"i{self.count}"
        self.sent[ping_id] = now
        self.tally.owed += 1
        self.connection.send_text(json.dumps({"type": "ping", "id": ping_id}))
        self._timer = asyncio.get_running_loop().call_later(self.plan.interval_s, self._ping)


def _loop_time(monotonic_at: float) -> float:
    """A ``time.monotonic()`` moment as the running loop's clock reads it."""
    return asyncio.get_running_loop().time() + (monotonic_at - time.monotonic())


async def _ping_client(plan: PingPlan, pipe: Connection) -> None:
    sessions, failures = await open_sessions(plan.connect)
    pipe.send({"kind": "connected", "sessions": len(sessions), "failures": dict(failures)})
    go = await receive_from_runner(pipe, "go")
    tally = PingTally()
    pingers = [Pinger(c, plan, (go["start"], go["end"]), tally) for c in sessions]
    for pinger in pingers:
        pinger.begin()
    await asyncio.sleep(max(0.0, go["end"] - time.monotonic()))
    tally.ended = True  # no ping leaves after the end: wait for the owed pongs, bounded
    if tally.owed > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(tally.drained.wait(), plan.drain_s)
    for pinger in pingers:
        pinger.stop()
    await close_sessions(sessions, timeout_s=5.0)
    pipe.send(
        {
            "kind": "result",
            "ping_ms": tally.ping_ms,
            "unanswered_pings": sum(len(p.sent) for p in pingers),
            "dropped_sessions": tally.dropped_sessions,
        }
    )


def ping_client_main(plan: PingPlan, pipe: Connection) -> None:
    """Process entry point of an idle-ping client."""
    run_client_process(_ping_client(plan, pipe), pipe)

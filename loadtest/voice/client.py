"""A voice load client process: N sessions streaming microphone audio in real time.

Talks to the runner over a pipe like :mod:`loadtest.common.clients`::

    client -> {"kind": "connected", ...}   runner -> {"kind": "go", "t0", "start", "end"}
    client -> {"kind": "result", ...}

One pacer per process sends every session's chunks: chunk ``seq`` of a session
in slot ``s`` is due at ``t0 + seq * 20 ms + offset(s)``, the slots' offsets
spread over one chunk (and the processes' slots interleaved), so the server gets
a steady stream rather than one burst of N frames every 20 ms. A late tick sends
every chunk that has come due (a microphone buffers; audio is never sent ahead
of real time), and its lateness is the client's send lag.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import Connection

from loadtest.common.clients import Window, open_session, receive_from_runner, run_client_process
from loadtest.voice.audio import (
    audio_header,
    audio_loops,
    detector_settings,
    expected_onsets,
    session_start,
)
from loadtest.voice.config import CHUNK_MS
from loadtest.voice.session import VoiceSession, VoiceTally
from loadtest.voice.wire import FrameMask, VoiceConnection

CHUNK_S = CHUNK_MS / 1000
FIRST_ONSET_MIN_MS = 1000
"""A barge-in session's first speech comes at least this long after its question."""


@dataclass(frozen=True, slots=True)
class Role:
    """What one session does besides streaming audio."""

    barge_in: bool
    pings: bool


@dataclass(frozen=True, slots=True)
class VoicePlan:
    """One client process's sessions and pacing."""

    url: str
    roles: tuple[Role, ...]
    process_index: int
    processes: int
    pace_slots: int
    stream_s: float
    """Audio each session streams (warm-up plus window)."""
    ping_interval_s: float
    expect_speech: bool
    """False against the bare server: it detects nothing, so nothing is expected."""
    seed: int
    connect_concurrency: int
    drain_s: float
    connect_timeout_s: float = 30.0


# -- opening ----------------------------------------------------------------------


async def _open(url: str, role: Role, timeout_s: float) -> VoiceConnection:
    start = json.dumps(session_start(create_response=role.barge_in))
    return await open_session(url, timeout_s, start, VoiceConnection)


async def _open_all(plan: VoicePlan) -> tuple[list[tuple[Role, VoiceConnection]], Counter[str]]:
    gate = asyncio.Semaphore(plan.connect_concurrency)

    async def one(role: Role) -> tuple[Role, VoiceConnection]:
        async with gate:
            return role, await _open(plan.url, role, plan.connect_timeout_s)

    outcomes = await asyncio.gather(*(one(r) for r in plan.roles), return_exceptions=True)
    opened = [o for o in outcomes if isinstance(o, tuple)]
    failures: Counter[str] = Counter(
        f"{type(o).__name__}: {o}"[:160] for o in outcomes if isinstance(o, BaseException)
    )
    return opened, failures


# -- sessions and their audio -------------------------------------------------------


def _sessions(
    plan: VoicePlan,
    opened: list[tuple[Role, VoiceConnection]],
    window: Window,
    tally: VoiceTally,
) -> list[VoiceSession]:
    """A session per connection, each with a random loop and phase (seeded per process)."""
    rng = random.Random(plan.seed * 1000 + plan.process_index)
    loops = audio_loops()
    chunks = round(plan.stream_s / CHUNK_S) + 1
    min_speech_ms = detector_settings().min_speech_ms
    ping_every = max(1, round(plan.ping_interval_s / CHUNK_S))
    sessions = []
    for role, connection in opened:
        loop_index = rng.randrange(len(loops))
        length = len(loops[loop_index].chunks)
        onsets: tuple[int, ...] = ()
        for _ in range(100):
            phase = rng.randrange(length)
            if not plan.expect_speech:
                break
            onsets = expected_onsets(loop_index, phase, chunks)
            # A barge-in session's question must be answering before the user speaks.
            if not role.barge_in or (onsets and onsets[0] >= FIRST_ONSET_MIN_MS):
                break
        sessions.append(
            VoiceSession(
                connection,
                barge_in=role.barge_in,
                ping_every=ping_every if role.pings else 0,
                ping_offset=rng.randrange(ping_every),
                loop_index=loop_index,
                phase=phase,
                onsets=onsets,
                min_speech_ms=min_speech_ms,
                window=window,
                tally=tally,
            )
        )
    return sessions


class Pacer:
    """Sends every session's chunks at real-time pace from one loop per process."""

    def __init__(self, plan: VoicePlan, sessions: list[VoiceSession], window: Window) -> None:
        self.plan = plan
        self.window = window
        self.mask = FrameMask()
        self.masked = [tuple(self.mask.mask(c) for c in loop.chunks) for loop in audio_loops()]
        slots = plan.pace_slots
        self.slots = [sessions[s::slots] for s in range(slots)]
        spread = slots * plan.processes
        self.offsets = [
            CHUNK_S * (s * plan.processes + plan.process_index) / spread for s in range(slots)
        ]
        self.chunks = round(plan.stream_s / CHUNK_S)
        self.lag_ms: list[float] = []
        self.ticks = 0
        self.late_ticks = 0

    async def run(self, t0: float) -> None:
        """Stream until every session has sent ``stream_s`` of audio."""
        next_seq = [0] * len(self.slots)
        turn = 0
        while True:
            slot = min(range(len(self.slots)), key=lambda s: (next_seq[s], s))
            seq = next_seq[slot]
            if seq >= self.chunks:
                return
            due = t0 + seq * CHUNK_S + self.offsets[slot]
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            now = time.monotonic()
            last = min(self.chunks, int((now - t0 - self.offsets[slot]) / CHUNK_S) + 1)
            for s in range(seq, max(seq + 1, last)):
                self._send(self.slots[slot], s, turn)
                turn += 1
            next_seq[slot] = max(seq + 1, last)
            lag = (time.monotonic() - due) * 1000.0
            if self.window.start <= due < self.window.end:
                self.ticks += 1
                self.lag_ms.append(lag)
                if lag > CHUNK_MS:
                    self.late_ticks += 1

    def _send(self, sessions: list[VoiceSession], seq: int, turn: int) -> None:
        """Chunk ``seq`` of every session of one slot, starting at a rotating position."""
        if not sessions:
            return
        head = self.mask.head(audio_header(seq))
        masked = self.masked
        first = turn % len(sessions)
        for session in sessions[first:] + sessions[:first]:
            if session.ended:
                continue
            chunks = masked[session.loop_index]
            session.connection.send_raw(head + chunks[(session.phase + seq) % len(chunks)])
            session.sent_chunk(seq, time.monotonic())


# -- the run --------------------------------------------------------------------------


async def _drain(sessions: list[VoiceSession], until: float) -> None:
    """Wait until nothing sent in the window is owed an answer, or until ``until``."""
    while True:
        if time.monotonic() >= until or not any(s.owes() for s in sessions):
            return
        await asyncio.sleep(0.05)


async def _voice_client(plan: VoicePlan, pipe: Connection) -> None:
    opened, failures = await _open_all(plan)
    window = Window(0.0, 0.0)  # set by "go"
    tally = VoiceTally()
    sessions = _sessions(plan, opened, window, tally)
    for session in sessions:
        session.start()
    pacer = Pacer(plan, sessions, window)
    pipe.send({"kind": "connected", "sessions": len(opened), "failures": dict(failures)})
    go = await receive_from_runner(pipe, "go")
    window.start, window.end = go["start"], go["end"]
    await asyncio.sleep(max(0.0, go["t0"] - time.monotonic()))
    if plan.expect_speech:
        for session in sessions:
            if session.barge_in:
                session.ask()
    await pacer.run(go["t0"])
    await _drain(sessions, time.monotonic() + plan.drain_s)
    for session in sessions:
        session.settle()
    await asyncio.gather(*(s.connection.close(5.0) for s in sessions), return_exceptions=True)
    # Not asdict: it rebuilds a Counter from its (key, count) pairs, counting the pairs.
    result = {name: getattr(tally, name) for name in tally.__dataclass_fields__}
    result.update(
        kind="result",
        send_lag_ms=pacer.lag_ms,
        ticks=pacer.ticks,
        late_ticks=pacer.late_ticks,
        loops=dict(Counter(audio_loops()[s.loop_index].name for s in sessions)),
    )
    pipe.send(result)


def voice_client_main(plan: VoicePlan, pipe: Connection) -> None:
    """Process entry point of a voice load client."""
    run_client_process(_voice_client(plan, pipe), pipe)

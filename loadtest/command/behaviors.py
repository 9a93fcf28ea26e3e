"""What one session of each scenario does, over and over until the load ends.

Every behaviour asks for answers and measures them with :func:`answer`; they differ in
what they do to the answer meanwhile: nothing (chat), a spoken turn first (voice), talk
over it (barge-in), cut the connection and resume (handoff, reconnect-storm), or stop
reading (slow-clients).
"""

from __future__ import annotations

import asyncio
import random
import time
import wave
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from websockets.exceptions import ConnectionClosed

from loadtest.command.options import Settings
from loadtest.command.recorder import Recorder
from loadtest.command.session import Session, close_code_of, voice_start
from loadtest.common.servers import REPO_ROOT

EVENT_TIMEOUT_S = 30.0
SPEECH = REPO_ROOT / "tests" / "fixtures" / "audio" / "speech_hello.wav"
CREATE = {"type": "response.create", "input": "tell me about the weather"}


def load_speech(path: Path = SPEECH) -> bytes:
    """The spoken turn every voice session sends (16 kHz mono PCM16)."""
    with wave.open(str(path), "rb") as recording:
        return recording.readframes(recording.getnframes())


@dataclass(slots=True)
class Context:
    """What every session of one run shares."""

    settings: Settings
    rec: Recorder
    url: str
    load_until: float
    rng: random.Random
    speech: bytes = field(default_factory=load_speech)
    storm: asyncio.Event = field(default_factory=asyncio.Event)

    def loading(self) -> bool:
        """Whether sessions still start new answers."""
        return time.monotonic() < self.load_until

    def turns(self) -> Iterator[int]:
        """A session's turns: the first always (a session that opened late still does its
        work once), then more while the load lasts."""
        turn = 0
        while turn == 0 or self.loading():
            yield turn
            turn += 1


@dataclass(slots=True)
class Plan:
    """What to do to one answer while it streams."""

    cut_at: int | None = None
    interrupt_at: int | None = None
    talk: bool = False


async def _resume_after_cut(s: Session, ctx: Context) -> None:
    """A cut connection comes back; against the baseline the answer is asked again."""
    if not await s.resume():
        await s.send(CREATE)


async def answer(s: Session, ctx: Context, plan: Plan, *, speech_end: float | None = None) -> str:
    """One answer (already asked for), measured; the ``response.done`` status."""
    rec = ctx.rec
    sent = speech_end if speech_end is not None else time.monotonic()
    tokens, last, interrupted, last_audio, first_audio = 0, None, None, None, None
    talking: asyncio.Task[float] | None = None
    while True:
        try:
            event = await s.recv(EVENT_TIMEOUT_S)
        except ConnectionClosed:
            if not s.cut_pending:
                raise
            await _resume_after_cut(s, ctx)
            last = None  # a gap across a reconnect is no inter-token latency
            continue
        kind, now = event["type"], time.monotonic()
        if kind == "response.text.delta":
            count = len(str(event.get("delta", "")).split()) or 1
            rec.tokens += count
            if tokens == 0:
                rec.sample("ttft_ms", now - sent)
            elif last is not None and interrupted is None:
                rec.sample("inter_token_ms", now - last)
            tokens, last = tokens + count, now
            if plan.cut_at is not None and tokens >= plan.cut_at:
                plan.cut_at = None
                s.cut()
            elif plan.interrupt_at is not None and tokens >= plan.interrupt_at and not interrupted:
                await s.send({"type": "response.interrupt"})
                interrupted = now
                if plan.talk:
                    talking = asyncio.create_task(speak(s, ctx, ctx.speech[: 16000 * 2 // 2]))
        elif kind == "response.audio.delta":
            if first_audio is None and speech_end is not None:
                first_audio = now
                rec.sample("speech_end_first_audio_ms", now - speech_end)
            if interrupted is not None:
                last_audio = now
            rec.counters["audio_bytes"] += int(event.get("bytes", 0))
        elif kind == "response.done":
            if interrupted is not None and event.get("status") == "interrupted":
                rec.sample("interrupt_done_ms", now - interrupted)
                rec.sample("interrupt_last_audio_ms", (last_audio or interrupted) - interrupted)
            elif interrupted is not None:
                rec.counters["interrupt_after_the_end"] += 1  # it ended first: no sample
            if talking is not None:
                await talking
            if s.cut_pending:
                # Cut after the done was already buffered here: resume anyway, so that
                # every cut is judged (nothing may come again, nothing may be missing).
                await s.resume()
            return str(event.get("status"))


async def speak(s: Session, ctx: Context, pcm: bytes) -> float:
    """Stream ``pcm`` as one turn in real time, the last chunk flagged; when it ended."""
    step = ctx.settings.chunk_ms * 32  # bytes per chunk at 16 kHz PCM16
    s.audio_turn += 1
    began = time.monotonic()
    chunks = [pcm[i : i + step] for i in range(0, len(pcm), step)] or [bytes(step)]
    for index, chunk in enumerate(chunks):
        due = began + index * ctx.settings.chunk_ms / 1000
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        await s.send_audio(chunk, last=index == len(chunks) - 1)
    return time.monotonic()


async def ask(s: Session, ctx: Context) -> None:
    """Ask for an answer, first resuming a connection the storm cut between two answers."""
    if s.cut_pending:
        await s.resume()
    await s.send(CREATE)


async def chat(s: Session, ctx: Context) -> None:
    """A text session: answers back to back."""
    await s.open()
    ctx.rec.active += 1
    for _ in ctx.turns():
        await ask(s, ctx)
        await answer(s, ctx, Plan())
        await asyncio.sleep(ctx.settings.think)


async def voice(s: Session, ctx: Context) -> None:
    """A voice session: a spoken turn, then its answer in text and audio."""
    await s.open(voice_start(create_response=True))
    ctx.rec.active += 1
    turn = ctx.speech[: ctx.settings.turn_ms * 32] if ctx.settings.turn_ms else ctx.speech
    for _ in ctx.turns():
        ended = await speak(s, ctx, turn)
        await answer(s, ctx, Plan(), speech_end=ended)
        await asyncio.sleep(ctx.settings.think)


async def barge_in(s: Session, ctx: Context) -> None:
    """A voice session that talks over each answer: interrupt, then a spoken turn."""
    # A loaded client may read the n-th token after the answer ended on the server.
    s.expected_errors = frozenset({"no_active_response"})
    await s.open(voice_start(create_response=False))
    ctx.rec.active += 1
    for _ in ctx.turns():
        await s.send(CREATE)
        await answer(s, ctx, Plan(interrupt_at=ctx.settings.interrupt_after, talk=True))
        await asyncio.sleep(ctx.settings.think)


async def handoff(s: Session, ctx: Context) -> None:
    """Answers whose connection is cut at a random token, then resumed."""
    await s.open()
    ctx.rec.active += 1
    top = ctx.settings.answer_tokens - 1
    for _ in ctx.turns():
        cut = ctx.rng.random() < ctx.settings.cut_share
        await s.send(CREATE)
        await answer(s, ctx, Plan(cut_at=ctx.rng.randint(1, top) if cut else None))
        await asyncio.sleep(ctx.settings.think)


async def storm_member(s: Session, ctx: Context) -> None:
    """A chat session; the storm (:func:`drop_all`) cuts it mid-answer with all the others."""
    await chat(s, ctx)


async def drop_all(sessions: list[Session], ctx: Context, at: float) -> None:
    """At ``at`` (monotonic), abort every open connection at once."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    # Every session in the storm: one still opening (a loaded client, a slow target) is
    # waited for, within the load's time.
    opening = [s for s in sessions if s.ws is None or not s.session_id]
    while opening and ctx.loading():
        await asyncio.sleep(0.01)
        opening = [s for s in opening if s.ws is None or not s.session_id]
    ctx.storm.set()
    for s in sessions:
        if s.ws is not None and s.session_id:
            s.cut()


async def slow_reader(s: Session, ctx: Context, *, stop: bool) -> None:
    """A reader that stops (or slows) while answers stream; asks on blindly meanwhile."""
    s.receive_buffer = 4096
    s.expected_errors = frozenset({"response_in_progress"})
    await s.open(voice_start(create_response=False))
    ctx.rec.active += 1
    pause = ctx.settings.slow_read_s
    try:
        while ctx.loading():
            await s.send(CREATE)  # refused while one runs; the next one starts after it
            if stop:
                await asyncio.sleep(0.1)
                continue
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                await s.recv(EVENT_TIMEOUT_S)
                await asyncio.sleep(pause)
        # Read what is left: the backlog, then the server's close if it closed.
        end = min(time.monotonic() + 3.0, ctx.load_until + ctx.settings.drain - 0.5)
        while time.monotonic() < end:
            await s.recv(max(0.01, end - time.monotonic()))
        ctx.rec.close_codes["still open"] += 1
    except ConnectionClosed as exc:
        ctx.rec.close_codes[close_code_of(exc)] += 1
    except TimeoutError:
        ctx.rec.close_codes["still open"] += 1

"""Run one scenario's sessions against one URL, bounded in time, with a progress bar."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn
from websockets.exceptions import ConnectionClosed

from loadtest.command import behaviors
from loadtest.command.behaviors import Context
from loadtest.command.options import Settings
from loadtest.command.recorder import Recorder
from loadtest.command.session import Session, SessionFailed, close_code_of

Behaviour = Callable[[Session, Context], Awaitable[None]]

ROLES: dict[str, Behaviour] = {
    "chat": behaviors.chat,
    "voice": behaviors.voice,
    "barge-in": behaviors.barge_in,
    "handoff": behaviors.handoff,
    "reconnect-storm": behaviors.storm_member,
}
TICK_S = 0.5


def _slow(stop: bool) -> Behaviour:
    async def run(s: Session, ctx: Context) -> None:
        await behaviors.slow_reader(s, ctx, stop=stop)

    return run


def roles_of(scenario: str, settings: Settings) -> list[str]:
    """The role of each session: the scenario's, or drawn by weight (mixed, slow-clients)."""
    rng = random.Random(settings.seed)
    n = settings.sessions
    if scenario == "slow-clients":
        bad = round(n * settings.slow_share)
        return ["stopped" if i % 2 == 0 else "slowed" for i in range(bad)] + ["chat"] * (n - bad)
    if scenario == "mixed":
        names = [k for k, w in settings.mix.items() if w > 0]
        weights = [settings.mix[k] for k in names]
        drawn = rng.choices(names, weights, k=n)
        return [("stopped" if i % 2 else "slowed") if r == "slow-clients" else r
                for i, r in enumerate(drawn)]  # fmt: skip
    return [scenario] * n


def behaviour_of(role: str) -> Behaviour:
    """The coroutine a session of ``role`` runs."""
    if role in ("stopped", "slowed"):
        return _slow(stop=role == "stopped")
    return ROLES[role]


@dataclass(slots=True)
class Outcome:
    """What one bounded run left."""

    rec: Recorder
    cut: bool
    """The hard bound (duration + drain) stopped sessions that had not finished."""
    seconds: float
    roles: dict[str, int]


async def _one(role: str, s: Session, ctx: Context, delay: float) -> None:
    await asyncio.sleep(delay)
    try:
        await behaviour_of(role)(s, ctx)
    except SessionFailed:
        pass  # counted in the recorder's errors where it happened
    except ConnectionClosed as exc:
        ctx.rec.close_codes[close_code_of(exc)] += 1
        if exc.rcvd is None and exc.sent is not None:  # we closed: say why (1009: too big)
            ctx.rec.errors[f"closed by the load test: {exc.sent.code}"] += 1
    except TimeoutError:
        ctx.rec.errors["no event within 30 s"] += 1
    finally:
        if s.session_id:
            ctx.rec.active -= 1
        s.tally()
        if s.ws is not None:
            await s.close()


async def drive(
    scenario: str,
    settings: Settings,
    url: str,
    *,
    label: str,
    rss: Callable[[], int | None] = lambda: None,
) -> Outcome:
    """Every session of ``scenario`` against ``url`` until the load ends or the bound cuts."""
    rec = Recorder()
    began = time.monotonic()
    ctx = Context(settings, rec, url, began + settings.duration, random.Random(settings.seed))
    roles = roles_of(scenario, settings)
    sessions = [Session(url, settings.api_key, rec) for _ in roles]
    spread = settings.ramp / max(1, len(roles))
    tasks = [
        asyncio.create_task(_one(role, s, ctx, i * spread))
        for i, (role, s) in enumerate(zip(roles, sessions, strict=True))
    ]
    if scenario == "reconnect-storm":
        at = began + settings.duration * settings.drop_at
        tasks.append(asyncio.create_task(behaviors.drop_all(sessions, ctx, at)))
    bound = settings.duration + settings.drain
    cut = not await _watch(tasks, rec, bound, label, settings.progress, rss)
    await _stop(tasks)
    counts: dict[str, int] = {}
    for role in roles:
        counts[role] = counts.get(role, 0) + 1
    return Outcome(rec, cut, time.monotonic() - began, counts)


async def _stop(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel the tasks, again until each has ended.

    On Python 3.11 ``asyncio.wait_for`` swallows a cancel that comes just as what it
    awaits completes (a frame received at that moment): the session would go on to
    its answer's end, a hundred seconds after the bound in a slow scenario.
    """
    pending = set(tasks)
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.5)
    await asyncio.gather(*tasks, return_exceptions=True)


async def _watch(
    tasks: list[asyncio.Task[None]],
    rec: Recorder,
    bound: float,
    label: str,
    show: bool,
    rss: Callable[[], int | None],
) -> bool:
    """Tick the timeline and the bar until every task ends (``True``) or the bound passes."""
    console = Console(stderr=True)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[elapsed]:.0f}/{task.fields[bound]:.0f} s"),
        TextColumn("{task.fields[active]} sessions active"),
        TextColumn("{task.fields[eps]:.0f} events/s"),
        console=console,
        disable=not show,
    )
    with progress if show else nullcontext():
        bar = progress.add_task(label, total=bound, elapsed=0.0, bound=bound, active=0, eps=0.0)
        while True:
            _, pending = await asyncio.wait(tasks, timeout=TICK_S)
            point = rec.tick(rss())
            progress.update(
                bar,
                completed=min(point["t"], bound),
                elapsed=point["t"],
                active=rec.active,
                eps=point["events_per_s"],
            )
            if not pending:
                return True
            if rec.elapsed() >= bound:
                return False

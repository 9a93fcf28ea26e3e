"""A router, three workers and one Redis: rolling restarts and a killed worker, under load."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from tests.processes import WorkerProcess, eventually
from tests.wsserver.router.test_router import RouterProcess
from wsserver.client.session_client import Backoff, SessionClient

SESSIONS = 200
PROMPT = "tell me about rolling restarts"
ANSWER_TOKENS = 30
WORKER_FLAGS = (
    *("--decode-rate", "40", "--answer-tokens", str(ANSWER_TOKENS)),
    *("--store-flush-ms", "5", "--registry-interval", "0.2", "--drain-timeout", "1.5"),
    *("--grace-period", "5"),
)
EXPLICIT = {
    ("incomplete", "worker_draining"),
    ("failed", "session_moved"),
    ("failed", "worker_lost"),
    # Started on a killed worker that died before storing it (the client saw more than
    # the store has): the SDK ends it for the application.
    ("truncated", "worker_lost"),
}


@pytest.fixture
def cluster(redis_url: str) -> Iterator[tuple[list[WorkerProcess], RouterProcess]]:
    workers = [
        WorkerProcess("--store", redis_url, *WORKER_FLAGS, name=name).start()
        for name in ("w1", "w2", "w3")
    ]
    router = RouterProcess(redis_url)
    try:
        yield workers, router
    finally:
        router.stop()
        for worker in workers:
            worker.stop()


async def _reference(url: str) -> str:
    async with SessionClient(url) as client:
        return (await client.ask(PROMPT)).text


class Talker:
    """One session asking the same question again and again until told to stop."""

    def __init__(self, url: str) -> None:
        self.client = SessionClient(url, backoff=Backoff(base=0.05, cap=1.0, max_attempts=30))
        self.outcomes: list[tuple[str, str | None, str]] = []

    async def run(self, stop: asyncio.Event) -> None:
        await self.client.open()
        while not stop.is_set():
            result = await self.client.ask(PROMPT)
            self.outcomes.append((result.status, result.reason, result.text))
        await self.client.close()


async def _talk_through(
    router: RouterProcess, during: Any, settle: float = 1.0
) -> tuple[list[Talker], str]:
    expected = await _reference(router.url)
    talkers = [Talker(router.url) for _ in range(SESSIONS)]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(t.run(stop)) for t in talkers]
    await eventually(lambda: all(t.outcomes for t in talkers), timeout=60)
    await during()
    # Every session answers once more after the disruption.
    marks = [len(t.outcomes) for t in talkers]
    try:
        await eventually(
            lambda: all(len(t.outcomes) > m for t, m in zip(talkers, marks, strict=True)),
            timeout=60,
        )
    except AssertionError:
        stuck = sum(len(t.outcomes) <= m for t, m in zip(talkers, marks, strict=True))
        errors = [task.exception() for task in tasks if task.done()]
        raise AssertionError(f"{stuck} sessions got no answer; errors: {errors[:3]}") from None
    stop.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert not failures, f"sessions that died: {failures[:3]}"
    return talkers, expected


def _check(talkers: list[Talker], expected: str, *, abrupt: bool = False) -> dict[str, int]:
    counts: dict[str, int] = {}
    for talker in talkers:
        client = talker.client
        assert client.sequence_gaps == 0, "a seq was skipped"
        if not abrupt:
            assert 1006 not in client.close_codes, f"an abrupt close: {client.close_codes}"
        for status, reason, text in talker.outcomes:
            key = f"{status}/{reason}"
            counts[key] = counts.get(key, 0) + 1
            if status == "completed":
                assert text == expected, "a completed answer differs from the uninterrupted one"
            else:
                assert (status, reason) in EXPLICIT, f"unexpected ending {status}/{reason}"
    return counts


async def test_every_worker_restarted_in_turn_under_load(
    cluster: tuple[list[WorkerProcess], RouterProcess],
) -> None:
    workers, router = cluster

    async def roll() -> None:
        for index, worker in enumerate(workers):
            worker.signal(signal.SIGTERM)
            assert worker.process is not None
            assert await asyncio.to_thread(worker.process.wait, 30) == 0
            workers[index] = WorkerProcess(*worker.flags, name=worker.name).start()

    talkers, expected = await _talk_through(router, roll)
    counts = _check(talkers, expected)
    assert counts.get("completed/None", 0) >= SESSIONS * 2
    # Sessions moved: the restarted workers took sessions over through the store.
    assert sum(w.stats()["store"]["takeovers"] for w in workers) > 0
    print(f"\nrolling restart, {SESSIONS} sessions: {counts}")


async def test_a_killed_worker_sessions_resume_elsewhere(
    cluster: tuple[list[WorkerProcess], RouterProcess],
) -> None:
    workers, router = cluster
    victim = workers[0]

    async def kill() -> None:
        await eventually(lambda: victim.stats()["sessions"] > 0)
        victim.signal(signal.SIGKILL)

    talkers, expected = await _talk_through(router, kill)
    counts = _check(talkers, expected, abrupt=True)  # a killed process sends no close frame
    # Each ends with an explicit status: the new owner's failed done, or (the client
    # saw more than the dead worker stored) the SDK's truncated.
    ended = ("failed/worker_lost", "failed/session_moved", "truncated/worker_lost")
    moved = sum(counts.get(key, 0) for key in ended)
    assert moved > 0, f"the killed worker's running answers end explicitly: {counts}"
    print(f"\nSIGKILL under load, {SESSIONS} sessions: {counts}")

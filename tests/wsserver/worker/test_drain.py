"""Rolling deploys: a worker drains on SIGTERM, and a full worker refuses new sessions."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.processes import WorkerProcess, eventually
from tests.wsserver.wire import RawClient
from wsserver.client.session_client import Backoff, SessionClient


@pytest.fixture
def workers(redis_url: str) -> Iterator[Any]:
    started: list[WorkerProcess] = []

    def start(name: str, *flags: str) -> WorkerProcess:
        worker = WorkerProcess("--store", redis_url, "--store-flush-ms", "5", *flags, name=name)
        started.append(worker.start())
        return worker

    yield start
    for worker in started:
        worker.stop()


def _exit_code(worker: WorkerProcess, timeout: float = 20) -> int:
    assert worker.process is not None
    return worker.process.wait(timeout)


async def test_sigterm_lets_the_answer_finish_then_clients_resume_elsewhere(workers: Any) -> None:
    a = workers("a", "--decode-rate", "50", "--answer-tokens", "60", "--drain-timeout", "20")
    b = workers("b", "--decode-rate", "50", "--answer-tokens", "60")
    client = SessionClient([a.url, b.url], backoff=Backoff(base=0.05))
    await client.open()
    await client.create_response("a story, please")
    first = await client.next_event(10)
    while first["type"] != "response.text.delta":
        first = await client.next_event(10)
    a.signal(signal.SIGTERM)
    # Draining: not ready any more, while the answer goes on.
    await eventually(lambda: a.get("/readyz")[0] == 503)
    result = await client.collect_response(timeout=30)
    assert result.status == "completed", "the running answer finished during the drain"
    assert len((first["delta"] + result.text).split()) == 60
    assert await asyncio.to_thread(_exit_code, a) == 0
    assert "draining" in "".join(a.lines)
    # The client was told 1012 and resumed on B, with nothing lost or doubled.
    await eventually(lambda: client.url == b.url and client.reconnects >= 1)
    again = await client.ask("and another one")
    assert again.status == "completed"
    assert b.stats()["store"]["takeovers"] == 1
    assert client.state.duplicates == 0
    await client.close()


async def test_past_the_drain_timeout_the_answer_moves_and_can_continue(workers: Any) -> None:
    slow = ("--decode-rate", "50", "--answer-tokens", "400")
    a = workers("a", *slow, "--drain-timeout", "0.5")
    # Only a's answer must outlast the drain; b just finishes the continuation (at 50 a
    # second it spent ~7 s of this test streaming the rest of the story).
    b = workers("b", "--decode-rate", "400", "--answer-tokens", "400")
    client = SessionClient([a.url, b.url], backoff=Backoff(base=0.05))
    await client.open()
    await client.create_response("a long story, please")
    seen: list[dict[str, Any]] = []
    while sum(e["type"] == "response.text.delta" for e in seen) < 5:
        seen.append(await client.next_event(10))
    a.signal(signal.SIGTERM)
    while seen[-1]["type"] != "response.done":
        seen.append(await client.next_event(20))
    done = seen[-1]
    # Ended explicitly by the draining worker, continuable on the next one.
    assert (done["status"], done["reason"]) == ("incomplete", "worker_draining")
    seqs = [e["seq"] for e in seen if "seq" in e]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    await client.continue_response(done["response_id"])
    more = await client.collect_response(timeout=30)
    assert more.status == "completed"
    assert client.url == b.url
    await client.close()


async def test_a_second_signal_forces_the_drain(workers: Any) -> None:
    a = workers("a", "--decode-rate", "20", "--answer-tokens", "4000", "--drain-timeout", "60")
    client = await RawClient.connect(a.url)
    await client.start()
    await client.send({"type": "response.create", "input": "go on forever"})
    await client.until("response.text.delta")
    a.signal(signal.SIGTERM)
    await eventually(lambda: a.get("/readyz")[0] == 503)
    a.signal(signal.SIGTERM)
    assert await client.closed_code(20) == 1012
    assert await asyncio.to_thread(_exit_code, a) == 0


async def test_with_the_memory_store_the_drained_answer_ends_before_the_close() -> None:
    # Nothing can resume this session elsewhere: its response.done must come before 1012.
    worker = WorkerProcess(
        *("--decode-rate", "50", "--answer-tokens", "4000", "--drain-timeout", "0.3"), name="m"
    ).start()
    try:
        client = await RawClient.connect(worker.url)
        await client.start()
        await client.send({"type": "response.create", "input": "a very long story"})
        await client.until("response.text.delta")
        worker.signal(signal.SIGTERM)
        done = await client.until("response.done", 20)
        assert (done["status"], done["reason"]) == ("incomplete", "worker_draining")
        assert await client.closed_code(20) == 1012
        assert await asyncio.to_thread(_exit_code, worker) == 0
    finally:
        worker.stop()


async def test_a_full_worker_refuses_new_sessions_with_a_retry_hint(workers: Any) -> None:
    a = workers("a", "--max-sessions", "1")
    first = await RawClient.connect(a.url)
    ready = await first.start()
    # A new session on a full worker: refused before the upgrade (a router tries elsewhere)...
    with pytest.raises(InvalidStatus) as refused:
        await connect(a.url)
    assert refused.value.response.status_code == 503
    assert refused.value.response.headers["Retry-After"] == "1"
    # ...and, for a client that got in before it filled up, closed with 1013.
    assert a.stats()["sessions"] == 1
    second = await RawClient.connect(a.url + f"?session_id={ready['session_id']}")
    await second.send({"type": "session.start"})
    assert await second.closed_code() == 1013
    # Resuming an existing session is still welcome.
    again = await RawClient.connect(a.url + f"?session_id={ready['session_id']}")
    await again.resume(ready, 0)
    assert (await again.until("session.ready"))["resumed"] is True
    # Full is still ready: resumes are served.
    assert a.get("/readyz")[0] == 200


async def test_workers_announce_themselves_in_the_registry(workers: Any, redis_url: str) -> None:
    from wsserver.registry.redis import RedisWorkerRegistry

    registry = RedisWorkerRegistry(redis_url, ttl=3.0)
    a = workers(
        "a",
        *("--registry-interval", "0.2", "--max-sessions", "50", "--drain-timeout", "30"),
        *("--decode-rate", "20", "--answer-tokens", "100"),
    )
    try:
        entries: list[Any] = []

        async def entry() -> Any:
            found = next((w for w in await registry.live() if w.worker_id == "a"), None)
            entries.append(found)
            return found

        await eventually_async(lambda: entry(), lambda e: e is not None)
        assert (entries[-1].url, entries[-1].capacity, entries[-1].draining) == (a.url, 50, False)
        client = await RawClient.connect(a.url)
        await client.start()
        await client.send({"type": "response.create", "input": "a five second answer"})
        await client.until("response.text.delta")
        await eventually_async(lambda: entry(), lambda e: e is not None and e.sessions == 1)
        a.signal(signal.SIGTERM)
        # Draining is announced at once (the answer holds the drain for seconds)...
        await eventually_async(lambda: entry(), lambda e: e is not None and e.draining)
        # ...and after the exit the entry is gone.
        assert await asyncio.to_thread(_exit_code, a, 30) == 0
        assert await entry() is None
    finally:
        await registry.close()


async def eventually_async(read: Any, condition: Any, timeout: float = 15.0) -> None:
    """Poll an async reading until ``condition`` holds (a bound, not a measurement)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition(await read()):
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)

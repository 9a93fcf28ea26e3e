"""A worker under hostile input keeps every label of ``/metrics`` in its documented set;
a slow consumer's close is counted by its code; ``--metrics off`` serves no metrics."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from protocol.codes import CloseCode
from tests.processes import WorkerProcess
from tests.wsserver.frontdoor.http import connect_as
from tests.wsserver.metrics.conftest import MeteredWorker, metered_worker
from tests.wsserver.metrics.scrape import get, moved, parse, scrape
from tests.wsserver.wire import RawClient
from wsserver.metrics import labels
from wsserver.metrics.collectors import CONNECTION_STATES, SESSION_STATES
from wsserver.metrics.router import DIRECTIONS, PLACEMENT_FAILURES, PLACEMENT_OUTCOMES

ALLOWED: dict[str, frozenset[str]] = {
    "status": labels.STATUSES | {"unknown", labels.OTHER},
    "reason": labels.REASONS | frozenset(labels.AUTH_REASONS),
    "code": labels.CLOSE_CODE_VALUES,
    "outcome": frozenset(
        {*labels.TOOL_OUTCOMES, "resumed", *labels.RESUME_REFUSALS, *PLACEMENT_OUTCOMES, "other"}
    ),
    "operation": frozenset(labels.STORE_OPERATIONS),
    "kind": frozenset({"unavailable", "other", "response.interrupt", "response.cancel"})
    | frozenset(PLACEMENT_FAILURES),
    "state": frozenset({*SESSION_STATES, *CONNECTION_STATES}),
    "direction": frozenset(DIRECTIONS),
    "le": frozenset(),  # histogram buckets: fixed by the definitions
}
"""Every label name the metrics use, and the values docs/METRICS.md lists for it."""


def check_bounded(text: str) -> int:
    """Assert every label value is allowed; returns how many series there are."""
    series = 0
    for name, by_labels in parse(text).items():
        for label_set in by_labels:
            series += 1
            for label, val in label_set:
                assert label in ALLOWED, f"{name} has an undocumented label {label}"
                if label != "le":
                    assert val in ALLOWED[label], f"{name}{{{label}={val!r}}} is unbounded"
    return series


@pytest.fixture(scope="module")
def slow_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeteredWorker]:
    """Small outbox and socket buffers: a reader that stops is closed 4000 quickly."""
    yield from metered_worker(
        tmp_path_factory.mktemp("keys"),
        "--answer-tokens", "3000",
        "--max-output-tokens", "3000",
        "--decode-rate", "4000",
        "--outbox-max-bytes", "4096",
        "--socket-send-buffer", "8192",
        "--write-limit", "4096",
        "--slow-consumer-close-timeout", "0.5",
        "--max-messages-per-second", "1000",
        name="slow",
    )  # fmt: skip


async def test_a_slow_consumer_is_counted_by_its_close_code(slow_worker: MeteredWorker) -> None:
    before = await asyncio.to_thread(scrape, slow_worker.base, slow_worker.admin_key)
    client = await RawClient.connect(
        slow_worker.url,
        rcvbuf=4096,
        additional_headers={"Authorization": f"Bearer {slow_worker.user_key}"},
    )
    await client.start()
    await client.send({"type": "response.create", "input": "a long answer nobody reads"})
    await asyncio.sleep(0)  # stop reading: the outbox fills past its bound
    code = None
    for _ in range(100):
        after = await asyncio.to_thread(scrape, slow_worker.base, slow_worker.admin_key)
        if moved(before, after, "wsserver_connection_closes_total", code="4000"):
            break
        await asyncio.sleep(0.1)
    assert moved(before, after, "wsserver_connection_closes_total", code="4000") == 1
    code = await client.closed_code()
    assert code in (CloseCode.SLOW_CONSUMER, 1006)


async def test_hostile_input_leaves_every_label_in_its_bounded_set(
    slow_worker: MeteredWorker,
) -> None:
    rng = random.Random(15)
    base = slow_worker.base
    # Bogus paths, with and without a credential, and odd methods of probing.
    for path in ("/metrics/../../etc", "/metrics?x=1", "/%2e%2e/stats", "/usage/x%00", "/x" * 40):
        for key in (None, "wsk_" + "a" * 40, slow_worker.user_key):
            await asyncio.to_thread(get, base + path, key)
    # Many sessions, closed by the client with random (even invalid-range) codes.
    for _ in range(60):
        client = await connect_as(slow_worker.url, key=slow_worker.user_key)
        await client.start()
        code = rng.choice([1000, 1001, 3000 + rng.randrange(2000), 4000 + rng.randrange(1000)])
        await client.ws.close(code, "bye")
    # Resumes of made-up sessions, and handshakes that never start a session.
    for _ in range(10):
        client = await connect_as(slow_worker.url, key=slow_worker.user_key)
        await client.resume({"session_id": f"sess_{rng.getrandbits(64):x}", "resume_token": "t"}, 7)
        with contextlib.suppress(ConnectionClosed):  # failed guesses are rate limited
            await client.until("error")
        await client.close()
    with pytest.raises(InvalidStatus):
        await connect(slow_worker.url + "/?session_id=" + "y" * 300)
    text = (await asyncio.to_thread(get, base + "/metrics", slow_worker.admin_key))[2]
    series = check_bounded(text)
    assert series < 2000, f"{series} series after hostile input"
    assert "sess_" not in text and "alice" not in text and "/x/x" not in text


def test_the_check_sees_an_unbounded_label() -> None:
    """The check itself can fail: a session id as a label value is caught."""
    with pytest.raises(AssertionError, match="unbounded"):
        check_bounded('wsserver_resumes_total{outcome="sess_abc"} 1.0\n')


def test_metrics_off_serves_404_and_stats_still_answer(tmp_path: Path) -> None:
    worker = WorkerProcess("--metrics", "off", name="unmetered").start()
    try:
        status, _, body = get(worker.http + "/metrics")
        assert status == 404 and "metrics are off" in body
        assert worker.stats()["sessions"] == 0
    finally:
        worker.stop()

"""The well-behaved side of the fuzz run: SDK sessions asking for answers, a health poller.

Each healthy session is a :class:`wsserver.client.session_client.SessionClient` asking for one
answer after another while the fuzz lanes run. An answer counts as complete
when it ends with exactly one ``response.done``, status ``completed``, and every
sequenced event since the session opened arrived with ``seq`` one above the
last (the SDK drops duplicates itself; a reconnect is counted as a disturbance).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from loadtest.common.report import summarize
from wsserver.client.session_client import SessionClient, SessionClosed

ANSWER_TIMEOUT_S = 30.0


@dataclass(slots=True)
class HealthyTally:
    """What the healthy sessions saw."""

    sessions: int = 0
    sessions_opened: int = 0
    answers_started: int = 0
    answers_completed: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    seq_gaps: int = 0
    extra_done: int = 0
    timeouts: int = 0
    reconnects: int = 0
    sessions_lost: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    api_key_passed: bool | None = None
    """Whether the SDK took the API key (``None``: none was given)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form: latencies summarised, the first failures named."""
        return {
            "sessions": self.sessions,
            "sessions_opened": self.sessions_opened,
            "answers_started": self.answers_started,
            "answers_completed": self.answers_completed,
            "statuses": dict(self.statuses),
            "seq_gaps": self.seq_gaps,
            "extra_done": self.extra_done,
            "timeouts": self.timeouts,
            "reconnects": self.reconnects,
            "sessions_lost": self.sessions_lost,
            "answer_ms": summarize(self.latencies_ms),
            "failures": self.failures[:20],
            "api_key_passed": self.api_key_passed,
        }


def _client(url: str, api_key: str | None, tally: HealthyTally) -> SessionClient:
    # The SDK grows an api_key parameter with the front door; pass it when it has one.
    kwargs: dict[str, Any] = {"max_output_tokens": 32}
    if api_key is not None:
        tally.api_key_passed = "api_key" in inspect.signature(SessionClient).parameters
        if tally.api_key_passed:
            kwargs["api_key"] = api_key
    return SessionClient(url, **kwargs)


async def healthy_session(
    index: int, url: str, api_key: str | None, stop: asyncio.Event, tally: HealthyTally
) -> None:
    """Ask for answers until ``stop`` is set, checking each one."""
    tally.sessions += 1
    client = _client(url, api_key, tally)
    try:
        await asyncio.wait_for(client.open(), ANSWER_TIMEOUT_S)
    except (SessionClosed, TimeoutError, OSError) as exc:
        tally.failures.append(f"session {index} did not open: {exc!r}")
        return
    tally.sessions_opened += 1
    last_seq = client.last_seq
    turn = 0
    try:
        while not stop.is_set():
            turn += 1
            tally.answers_started += 1
            began = time.monotonic()
            try:
                await client.create_response(f"healthy {index} turn {turn}")
                result = await client.collect_response(ANSWER_TIMEOUT_S)
            except TimeoutError:
                tally.timeouts += 1
                tally.failures.append(f"session {index} turn {turn}: no response.done in time")
                break
            except SessionClosed as exc:
                tally.sessions_lost += 1
                tally.failures.append(f"session {index} turn {turn}: session lost: {exc}")
                break
            tally.latencies_ms.append((time.monotonic() - began) * 1000)
            tally.statuses[result.status] += 1
            seqs = [e["seq"] for e in result.events if isinstance(e.get("seq"), int)]
            gaps = sum(1 for a, b in zip([last_seq, *seqs], seqs, strict=False) if b != a + 1)
            last_seq = seqs[-1] if seqs else last_seq
            dones = sum(1 for e in result.events if e.get("type") == "response.done")
            tally.seq_gaps += gaps
            tally.extra_done += max(0, dones - 1)
            if result.status == "completed" and dones == 1 and not gaps and result.text:
                tally.answers_completed += 1
            else:
                tally.failures.append(
                    f"session {index} turn {turn}: status {result.status} ({result.reason}),"
                    f" {dones} done, {gaps} seq gaps"
                )
            await asyncio.sleep(0.05)
    finally:
        tally.reconnects += client.reconnects
        tally.seq_gaps += client.sequence_gaps
        await client.close()


@dataclass(slots=True)
class HealthTally:
    """``GET /healthz`` answers during the run."""

    checks: int = 0
    failures: int = 0
    longest_ms: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    first_failure_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "checks": self.checks,
            "failures": self.failures,
            "healthz_ms": summarize(self.latencies_ms),
            "first_failure_after_s": self.first_failure_s,
        }


async def http_get(url: str, path: str, headers: dict[str, str], timeout_s: float) -> int:
    """Status code of ``GET path`` on the host and port of ``url`` (ws:// or http://)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    try:
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}Connection: close\r\n\r\n"
        writer.write(request.encode())
        line = await asyncio.wait_for(reader.readline(), timeout_s)
        parts_of_line = line.split()
        return int(parts_of_line[1]) if len(parts_of_line) > 1 else 0
    finally:
        writer.close()


@dataclass(slots=True)
class StoreWriterTally:
    """The worker's store writer, from ``/stats`` once a second: does it keep writing?"""

    samples: list[tuple[float, int]] = field(default_factory=list)
    """(seconds since the start, ``store.flushes``)."""

    def longest_pause_s(self) -> float | None:
        """The longest time ``store.flushes`` stood still while sampled."""
        if len(self.samples) < 2:
            return None
        longest, since = 0.0, self.samples[0]
        for sample in self.samples[1:]:
            if sample[1] != since[1]:
                since = sample
            longest = max(longest, sample[0] - since[0])
        return round(longest, 1)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        last = self.samples[-1][1] if self.samples else None
        pause = self.longest_pause_s()
        return {"samples": len(self.samples), "flushes": last, "longest_pause_s": pause}


async def watch_store_writer(
    url: str, headers: dict[str, str], stop: asyncio.Event, tally: StoreWriterTally, began: float
) -> None:
    """Sample ``/stats`` ``store.flushes`` every second until ``stop``."""
    http_url = url.replace("ws://", "http://", 1).rstrip("/") + "/stats"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def read() -> int | None:
        try:
            request = urllib.request.Request(http_url, headers=headers)
            with opener.open(request, timeout=5) as reply:
                return int(json.loads(reply.read())["store"]["flushes"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    while not stop.is_set():
        flushes = await asyncio.to_thread(read)
        if flushes is not None:
            tally.samples.append((round(time.monotonic() - began, 2), flushes))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


async def poll_health(
    url: str, headers: dict[str, str], stop: asyncio.Event, tally: HealthTally, began: float
) -> None:
    """``/healthz`` twice a second; a failure is no 200 within 5 s."""
    while not stop.is_set():
        start = time.monotonic()
        try:
            status = await http_get(url, "/healthz", headers, 5.0)
        except (OSError, TimeoutError, ValueError):
            status = 0
        elapsed_ms = (time.monotonic() - start) * 1000
        tally.checks += 1
        tally.latencies_ms.append(elapsed_ms)
        if status != 200:
            tally.failures += 1
            if tally.first_failure_s is None:
                tally.first_failure_s = round(time.monotonic() - began, 1)
        with_timeout = max(0.0, 0.5 - elapsed_ms / 1000)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), with_timeout)

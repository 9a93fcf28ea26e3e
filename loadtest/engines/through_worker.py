"""The measured path: the same local engine inside ``wsserver serve``, reached by the SDK.

The worker is a subprocess (``--engine local``, its llama.cpp server on a known loopback
port so ``/slots`` can be read); each session is a :class:`SessionClient` over a real
WebSocket, and the clock runs from the request sent to the first text delta received.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from loadtest.common.processes import free_port
from loadtest.common.servers import ServerProcess
from loadtest.engines.config import QUESTIONS, EnginesConfig
from loadtest.engines.direct import STORY
from loadtest.engines.slots import seconds_until_idle
from wsserver.client import SessionClient

LOCAL_KEY = secrets.token_urlsafe(24)
"""The embedded server's API key, given to the worker (--local-api-key-env) so that its
``/slots`` can be read."""


def worker_flags(config: EnginesConfig, parallel: int, port: int, *extra: str) -> list[str]:
    """The ``wsserver serve`` flags of the measured worker (its llama.cpp server on ``port``);
    the direct voice path builds its engine from the same flags."""
    return [
        "--host=127.0.0.1",
        "--port=0",
        "--engine=local",
        f"--local-threads={config.threads}",
        f"--local-parallel={parallel}",
        f"--local-context={2048 * parallel}",
        f"--local-port={port}",
        "--local-api-key-env=LOADTEST_LOCAL_API_KEY",
        "--upstream-temperature=0",
        "--log-level=WARNING",
        *extra,
        *config.worker_args,
    ]


def start_worker(
    config: EnginesConfig, parallel: int, log_dir: Path, *extra: str
) -> tuple[ServerProcess, str]:
    """``wsserver serve --engine local`` and the address of its llama.cpp server."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "wsserver.cli.main",
        "serve",
        *worker_flags(config, parallel, port, *extra),
    ]
    # The worker inherits the environment (less its WSSERVER_* variables).
    os.environ["LOADTEST_LOCAL_API_KEY"] = LOCAL_KEY
    server = ServerProcess("worker", argv, log_dir)
    server.start(timeout_s=120.0)
    return server, f"http://127.0.0.1:{port}"


async def _session(
    url: str, config: EnginesConfig, number: int, out: dict[str, list[Any]], go: asyncio.Barrier
) -> None:
    async with SessionClient(url, max_output_tokens=config.max_tokens) as client:
        # Every session asks its first question at once, as the direct path submits them:
        # requests that reach llama.cpp staggered are decoded staggered.
        await go.wait()
        for question in range(config.questions):
            began = time.perf_counter()
            await client.create_response(QUESTIONS[(number + question) % len(QUESTIONS)])
            first: float | None = None
            while True:
                event = await client.next_event(120)
                if event["type"] == "response.text.delta" and first is None:
                    first = time.perf_counter()
                elif event["type"] == "response.done":
                    break
            if first is not None:
                out["ttft_s"].append(first - began)
            out["tokens"].append(int(event["usage"]["output_tokens_delivered"]))
            out["finish"].append(str(event["status"]))


async def measure(
    url: str, llama: str, config: EnginesConfig, phases: tuple[str, ...]
) -> dict[str, Any]:
    """The text and interrupt phases against one worker, in turn."""
    results: dict[str, Any] = {}
    if "text" in phases:
        results["text"] = await measure_text(url, config)
    if "interrupt" in phases:
        results["interrupt"] = await measure_interrupts(url, llama, config)
    return results


async def measure_text(url: str, config: EnginesConfig) -> dict[str, Any]:
    """N concurrent sessions of Q questions each, through the worker."""
    out: dict[str, list[Any]] = {"ttft_s": [], "tokens": [], "finish": []}
    go = asyncio.Barrier(config.sessions + 1)
    sessions = [
        asyncio.create_task(_session(url, config, n, out, go)) for n in range(config.sessions)
    ]
    await go.wait()  # every session open
    began = time.perf_counter()
    await asyncio.gather(*sessions)
    wall = time.perf_counter() - began
    return {**out, "wall_s": wall, "tokens_per_s": sum(out["tokens"]) / wall}


async def measure_interrupts(url: str, llama: str, config: EnginesConfig) -> dict[str, Any]:
    """K answers interrupted after a few deltas: interrupt sent -> no slot decoding."""
    idle: list[float] = []
    done: list[float] = []
    missed = 0
    async with (
        httpx.AsyncClient(trust_env=False) as http,
        SessionClient(url, max_output_tokens=config.max_tokens * 8) as client,
    ):
        for _ in range(config.interrupts):
            await client.create_response(STORY)
            deltas = 0
            since: float | None = None
            idle_task: asyncio.Task[float | None] | None = None
            while True:
                event = await client.next_event(120)
                if event["type"] == "response.text.delta" and since is None:
                    deltas += 1
                    if deltas == config.interrupt_after:
                        since = time.perf_counter()
                        await client.interrupt()
                        # Polled beside the events: the done comes before the slot frees.
                        poll = seconds_until_idle(http, llama, LOCAL_KEY, since)
                        idle_task = asyncio.create_task(poll)
                elif event["type"] == "response.done":
                    if since is not None and event["status"] == "interrupted":
                        done.append(time.perf_counter() - since)
                    break
            seconds = await idle_task if idle_task is not None else None
            if seconds is None or since is None:
                missed += 1  # it ended by itself before the cut, or never went idle
            else:
                idle.append(seconds)
    return {"idle_s": idle, "done_s": done, "not_measured": missed}

"""One phase of the benchmark: a worker subprocess on a store, N sessions streaming."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from loadtest.store_cluster.nodes import RedisNodes
from protocol.encoding import JSON_SUBPROTOCOL

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Phase:
    """What one phase measured, over the streaming window only."""

    store: str
    sessions: int
    tokens: int
    frames: int
    seconds: float
    round_trips: int
    redis_commands: int
    worker_cpu_s: float
    failed_sessions: int

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    @property
    def round_trips_per_token(self) -> float:
        return self.round_trips / self.tokens if self.tokens else 0.0

    @property
    def commands_per_token(self) -> float:
        return self.redis_commands / self.tokens if self.tokens else 0.0

    @property
    def cpu_per_token(self) -> float:
        return self.worker_cpu_s / self.tokens if self.tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "round_trips_per_token": round(self.round_trips_per_token, 4),
            "redis_commands_per_token": round(self.commands_per_token, 4),
            "worker_cpu_us_per_token": round(self.cpu_per_token * 1e6, 2),
        }


class Worker:
    """``wsserver serve`` on the store, in a subprocess; stopped by pid."""

    def __init__(self, args: argparse.Namespace, store: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WSSERVER_")}
        env["PYTHONPATH"] = str(ROOT)
        env["PYTHONUNBUFFERED"] = "1"
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "wsserver.cli.main", "serve"),
                *("--port", "0", "--worker-id", "bench", "--store", store),
                # One process: with a Redis store ``serve`` runs one per core by default,
                # and /stats would then come from whichever process took the request.
                "--workers=1",
                *("--decode-rate", f"{args.decode_rate:g}"),
                *("--answer-tokens", str(args.answer_tokens)),
                *("--store-flush-ms", f"{args.store_flush_ms:g}"),
                *("--max-sessions", str(max(1000, 2 * args.sessions))),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        found = threading.Event()
        self.url = ""

        def pump() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                self.lines.append(line)
                match = re.search(r"listening on (ws://\S+)", line)
                if match and not found.is_set():
                    self.url = match.group(1)
                    found.set()

        threading.Thread(target=pump, daemon=True).start()
        if not found.wait(30):
            self.stop()
            raise RuntimeError("worker did not start:\n" + "".join(self.lines[-20:]))
        self.cpu = psutil.Process(self.process.pid)

    def stats(self) -> dict[str, Any]:
        url = self.url.replace("ws://", "http://") + "/stats"
        with urllib.request.urlopen(url, timeout=10) as response:
            result: dict[str, Any] = json.load(response)
            return result

    def cpu_seconds(self) -> float:
        times = self.cpu.cpu_times()
        return float(times.user + times.system)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


async def _session(
    url: str, rounds: int, ready: asyncio.Event, go: asyncio.Event
) -> tuple[int, int]:
    """One session: start, wait for the go, stream ``rounds`` answers; the tokens
    delivered (as each answer's usage counts them) and the delta frames received (a
    lagging client's queued deltas merge, so frames can be fewer)."""
    tokens = frames = 0
    async with connect(url, subprotocols=[Subprotocol(JSON_SUBPROTOCOL)], compression=None) as ws:
        await ws.send(json.dumps({"type": "session.start"}))
        while json.loads(await ws.recv())["type"] != "session.ready":
            pass
        ready.set()
        await go.wait()
        for round_index in range(rounds):
            await ws.send(json.dumps({"type": "input.text", "text": f"question {round_index}"}))
            await ws.send(json.dumps({"type": "response.create"}))
            while True:
                event = json.loads(await ws.recv())
                if event["type"] == "response.text.delta":
                    frames += 1
                elif event["type"] == "response.done":
                    if event["status"] != "completed":
                        raise RuntimeError(f"answer ended {event['status']}")
                    tokens += int(event["usage"]["output_tokens_delivered"])
                    break
    return tokens, frames


async def measure(args: argparse.Namespace, nodes: RedisNodes) -> Phase:
    """Start a worker on ``nodes``, open every session, then stream and measure."""
    worker = Worker(args, nodes.url)
    try:
        go = asyncio.Event()
        readies = [asyncio.Event() for _ in range(args.sessions)]
        tasks = [
            asyncio.create_task(_session(worker.url, args.rounds, ready, go)) for ready in readies
        ]
        await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies)), 120)
        await asyncio.sleep(0.2)  # the session records' writes settle
        before = await asyncio.to_thread(worker.stats)
        commands = await asyncio.to_thread(nodes.commands_processed)
        cpu = worker.cpu_seconds()
        started = time.perf_counter()
        go.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        seconds = time.perf_counter() - started
        await asyncio.sleep(0.1)  # the last batch's write
        after = await asyncio.to_thread(worker.stats)
        return Phase(
            store="cluster" if nodes.cluster else "single",
            sessions=args.sessions,
            tokens=sum(r[0] for r in results if isinstance(r, tuple)),
            frames=sum(r[1] for r in results if isinstance(r, tuple)),
            seconds=round(seconds, 3),
            round_trips=after["store"]["round_trips"] - before["store"]["round_trips"],
            redis_commands=await asyncio.to_thread(nodes.commands_processed) - commands,
            worker_cpu_s=round(worker.cpu_seconds() - cpu, 3),
            failed_sessions=sum(isinstance(r, BaseException) for r in results),
        )
    finally:
        worker.stop()

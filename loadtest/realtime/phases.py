"""The measured run: one ``wsserver serve``, both dialects in alternating rounds.

Each round runs, for each dialect in turn (the native protocol twice: text sessions,
and voice sessions as the Realtime endpoint opens its own), one answer and one cancelled answer on
every one of its N sessions at once; the other dialect's sessions stay idle
meanwhile, so the worker's CPU in a dialect's half of a round is that dialect's.
Rounds rotate the order, which spreads any drift of the machine over both dialects alike.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from loadtest.common.servers import ServerProcess, log_warnings, tail_on_error, worker_argv
from loadtest.realtime.config import RealtimeBenchConfig
from loadtest.realtime.dialects import DIALECTS, Dialect, DialectClient

SDK_SCRIPT = Path(__file__).with_name("sdk_turns.py")
SDK_TIMEOUT_S = 300.0


def empty_sample() -> dict[str, Any]:
    return {"ttft_s": [], "cancel_s": [], "statuses": {}, "cpu_s": 0.0, "responses": 0}


def count(sample: dict[str, Any], status: str) -> None:
    sample["statuses"][status] = sample["statuses"].get(status, 0) + 1
    sample["responses"] += 1


async def one_round(
    clients: list[DialectClient], server: ServerProcess, sample: dict[str, Any], after: int
) -> None:
    """An answer, then a cancelled answer, on every session of one dialect at once."""
    cpu = server.cpu_seconds()
    answers = await asyncio.gather(*(client.answer() for client in clients))
    cancels = await asyncio.gather(*(client.cancelled(after) for client in clients))
    sample["cpu_s"] += server.cpu_seconds() - cpu
    for answer in answers:
        count(sample, answer["status"])
        if answer["ttft_s"] is not None:
            sample["ttft_s"].append(answer["ttft_s"])
    for cancel in cancels:
        count(sample, cancel["status"])
        if cancel["cancel_s"] is not None and cancel["status"] == "cancelled":
            sample["cancel_s"].append(cancel["cancel_s"])


async def measure(config: RealtimeBenchConfig, server: ServerProcess) -> dict[str, Any]:
    """Both dialects' samples and, when the SDK is there, the solo pair."""
    sessions: dict[Dialect, list[DialectClient]] = {}
    for dialect in DIALECTS:
        sessions[dialect] = list(
            await asyncio.gather(
                *(DialectClient.open(dialect, server.url) for _ in range(config.sessions))
            )
        )
    try:
        warm = empty_sample()  # one unmeasured round: imports, caches, first allocations
        for dialect in DIALECTS:
            await one_round(sessions[dialect], server, warm, config.cancel_after)
        samples = {dialect.name: empty_sample() for dialect in DIALECTS}
        for index in range(config.rounds):
            shift = index % len(DIALECTS)
            order = DIALECTS[shift:] + DIALECTS[:shift]
            for dialect in order:
                await one_round(
                    sessions[dialect], server, samples[dialect.name], config.cancel_after
                )
    finally:
        for clients in sessions.values():
            await asyncio.gather(*(client.close() for client in clients), return_exceptions=True)
    results: dict[str, Any] = {"concurrent": samples}
    if config.sdk_turns and config.sdk_python:
        results["solo"] = await solo_pair(config, server)
    return results


async def solo_pair(config: RealtimeBenchConfig, server: ServerProcess) -> dict[str, Any]:
    """One session alone: the unmodified SDK over ``/v1/realtime``, and this stack's
    native client for the same turns (the SDK's same-run baseline)."""
    native = await DialectClient.open(DIALECTS[0], server.url)
    solo = empty_sample()
    try:
        for _ in range(config.sdk_turns):
            await one_round([native], server, solo, config.cancel_after)
    finally:
        await native.close()
    base_url = server.url.replace("ws://", "http://") + "/v1"
    argv = [config.sdk_python, str(SDK_SCRIPT), base_url, str(config.sdk_turns)]
    argv.append(str(config.cancel_after))
    run = await asyncio.to_thread(
        subprocess.run, argv, capture_output=True, text=True, timeout=SDK_TIMEOUT_S
    )
    if run.returncode != 0:
        raise RuntimeError(f"the openai SDK sample failed:\n{run.stderr[-3000:]}")
    sdk: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return {"native": solo, "sdk": sdk}


def run_phases(config: RealtimeBenchConfig, log_dir: Path) -> dict[str, Any]:
    """Start the worker, measure, stop it."""
    argv = worker_argv(
        decode_rate=config.decode_rate,
        answer_tokens=config.answer_tokens,
        sessions=len(DIALECTS) * config.sessions,
        extra=config.worker_args,
    )
    with ServerProcess.launch("worker", argv, log_dir) as server, tail_on_error(server):
        began = time.monotonic()
        results = asyncio.run(measure(config, server))
        results["measure_s"] = round(time.monotonic() - began, 1)
        server.check_alive()
        results["worker_log"] = log_warnings(server)
    return results

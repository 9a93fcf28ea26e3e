"""The session work per token with no socket: what any send path adds its cost to.

``python -m loadtest.send_path.session_work`` runs N real session runtimes of the
worker (the simulated engine decoding as fast as it can, the memory store and its
persister, numbering, replay buffer and outbox) and pulls every numbered event
out of them as a connection's writer would — but writes nothing anywhere. Each
answer that ends starts the next one, so every session streams all the time.
It prints one JSON object: frames pulled and CPU seconds per frame.

The send-path benchmark runs it once per round beside the bare websockets
server: the ratio of the two is the share of a bare server's whole per-token
cost that the session alone takes before any byte reaches a socket, so it
bounds what a faster send path can gain (a worker costs at least this much).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import uvloop

from protocol.codes import CloseCode
from protocol.messages import ResponseCreate, parse_client_message
from protocol.session import ServerSession
from protocol.session.responses import SessionLimits
from protocol.snapshot import conversation_snapshot, stream_snapshot
from wsserver.engine.simulated import SimulatedEngine, SimulatedEngineConfig
from wsserver.metrics import worker_metrics
from wsserver.session.context import EndedRuntime, RuntimeContext
from wsserver.session.persistence import Persister
from wsserver.session.runtime import SessionRuntime
from wsserver.store.base import SessionRecord
from wsserver.store.memory import MemorySessionStore

_QUESTION = {"type": "response.create", "input": "question 1"}


def _question() -> ResponseCreate:
    message = parse_client_message(_QUESTION)
    assert isinstance(message, ResponseCreate)
    return message


class _NoHost:
    """The worker's side of a runtime: no session ends during the measurement."""

    def session_ended(self, runtime: EndedRuntime, *, remove_from_store: bool) -> None:
        """Nothing to forget."""


class CountingTransport:
    """A connection that takes every ready event and sends none (no socket at all)."""

    __slots__ = ("frames", "runtime", "woken")

    def __init__(self, woken: list[CountingTransport]) -> None:
        self.runtime: SessionRuntime | None = None
        self.woken = woken
        self.frames = 0

    def wake(self) -> None:
        """Queue this connection for the next pull (as a flush queue would)."""
        self.woken.append(self)

    def close(self, code: CloseCode, text: str) -> None:
        """Nothing to close."""


async def _open(
    count: int, context: RuntimeContext, store: MemorySessionStore
) -> list[CountingTransport]:
    woken: list[CountingTransport] = []
    transports = []
    for number in range(count):
        session = ServerSession(f"bench-{number}", SessionLimits())
        record = SessionRecord(
            session.session_id,
            "bench",
            time.time(),
            owner=context.worker_id,
            conversation=conversation_snapshot(session).to_dict(),
            stream=stream_snapshot(session).to_dict(),
        )
        await store.create(record)
        runtime = SessionRuntime(session, context, token_hash="bench", epoch=1)
        runtime.journal.conversation_version = session.conversation.version
        transport = CountingTransport(woken)
        transport.runtime = runtime
        runtime.attach(transport)
        transports.append(transport)
    return transports


async def _pull_forever(woken: list[CountingTransport]) -> None:
    """Take every ready event of every woken session, once per loop turn."""
    question = _question()
    while True:
        await asyncio.sleep(0)
        if not woken:
            continue
        batch = woken[:]
        woken.clear()
        for transport in batch:
            runtime = transport.runtime
            assert runtime is not None
            while (event := runtime.next_event()) is not None:
                transport.frames += 1
                if event.type == "response.done":
                    runtime.settle()
                    runtime.handle(question)


async def measure(sessions: int, seconds: float, warmup: float) -> dict[str, Any]:
    """Frames pulled and CPU per frame over ``seconds``, after ``warmup``."""
    engine = SimulatedEngine(
        SimulatedEngineConfig(
            decode_rate=1e9,
            slots=sessions + 10,
            prefill_base_s=0,
            prefill_per_token_s=0,
            answer_tokens=100,
        )
    )
    await engine.start()
    store = MemorySessionStore()
    persister = Persister(store, interval=0.005)
    persisting = asyncio.create_task(persister.run())
    context = RuntimeContext(
        engine=engine,
        store=store,
        persister=persister,
        host=_NoHost(),
        worker_id="bench",
        grace_period=5,
        resume_window=60,
        metrics=worker_metrics(),
    )
    transports = await _open(sessions, context, store)
    question = _question()
    for transport in transports:
        assert transport.runtime is not None
        transport.runtime.handle(question)
    pulling = asyncio.create_task(_pull_forever(transports[0].woken if transports else []))
    await asyncio.sleep(warmup)
    frames_before, cpu_before = sum(t.frames for t in transports), time.process_time()
    await asyncio.sleep(seconds)
    frames_after, cpu_after = sum(t.frames for t in transports), time.process_time()
    pulling.cancel()
    persisting.cancel()
    await engine.close()
    frames = frames_after - frames_before
    return {
        "sessions": sessions,
        "seconds": seconds,
        "frames": frames,
        "cpu_us_per_frame": round((cpu_after - cpu_before) / frames * 1e6, 2) if frames else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Print the measurement as one JSON object."""
    parser = argparse.ArgumentParser(prog="python -m loadtest.send_path.session_work")
    parser.add_argument("--sessions", type=int, default=1000, help="runtimes (1000)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds (default 3)")
    parser.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds first (0.5)")
    args = parser.parse_args(argv)
    # The worker's own collector settings (``wsserver serve`` sets the same).
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    result = uvloop.run(measure(max(1, args.sessions), args.seconds, args.warmup))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

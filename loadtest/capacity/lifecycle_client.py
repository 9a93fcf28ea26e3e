"""The lifecycle client process: idle sessions, detached, resumed, then closed.

It talks to the runner as :mod:`loadtest.common.clients` describes::

    client -> {"kind": "connected"}          (N sessions open and idle)
    runner -> {"kind": "detach"}   client -> {"kind": "detached"}  (TCP aborted, no close)
    runner -> {"kind": "resume"}   client -> {"kind": "resumed", "resume_ms", "failures"}
    runner -> {"kind": "close"}    client -> {"kind": "closed"}    (close 1000: ended)

An aborted connection is a *drop* (PROTOCOL.md): the session stays resumable for the
resume window, held by the worker and in the store, which is what a detached session
costs.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from multiprocessing.connection import Connection

from loadtest.common.clients import (
    ConnectPlan,
    close_sessions,
    open_sessions,
    receive_from_runner,
    run_client_process,
)
from loadtest.common.wire import LeanConnection, open_connection


class ResumeRefused(RuntimeError):
    """The server answered a ``session.resume`` with something else than a resumed ready."""


def _credentials(connection: LeanConnection) -> tuple[str, str]:
    """Session id and resume token from the connection's ``session.ready``."""
    ready = json.loads(connection.first_text.result())
    return str(ready["session_id"]), str(ready["resume_token"])


async def _resume(url: str, session_id: str, token: str, timeout_s: float) -> LeanConnection:
    connection = await open_connection(url, timeout_s)
    message = {"type": "session.resume", "session_id": session_id, "resume_token": token}
    connection.send_text(json.dumps({**message, "last_seq": 0}))
    try:
        ready = await asyncio.wait_for(asyncio.shield(connection.first_text), timeout_s)
    except BaseException:
        await connection.close(1.0)
        raise
    if not ready.startswith('{"type":"session.ready"') or '"resumed":true' not in ready:
        await connection.close(1.0)
        raise ResumeRefused(ready[:160])
    return connection


async def _resume_all(
    plan: ConnectPlan, credentials: list[tuple[str, str]]
) -> tuple[list[LeanConnection], list[float], Counter[str]]:
    gate = asyncio.Semaphore(plan.concurrency)
    times: list[float] = []

    async def one(session_id: str, token: str) -> LeanConnection:
        async with gate:
            began = time.monotonic()
            connection = await _resume(plan.url, session_id, token, plan.timeout_s)
            times.append((time.monotonic() - began) * 1000.0)
            return connection

    outcomes = await asyncio.gather(*(one(s, t) for s, t in credentials), return_exceptions=True)
    resumed = [o for o in outcomes if isinstance(o, LeanConnection)]
    failures: Counter[str] = Counter(
        f"{type(o).__name__}: {o}"[:160] for o in outcomes if isinstance(o, BaseException)
    )
    return resumed, times, failures


async def _lifecycle_client(plan: ConnectPlan, pipe: Connection) -> None:
    sessions, failures = await open_sessions(plan)
    pipe.send({"kind": "connected", "sessions": len(sessions), "failures": dict(failures)})
    credentials = [_credentials(c) for c in sessions]
    await receive_from_runner(pipe, "detach")
    for connection in sessions:
        if connection.transport is not None:
            connection.transport.abort()  # no close frame: a network drop
    await asyncio.gather(*(c.closed for c in sessions), return_exceptions=True)
    pipe.send({"kind": "detached", "sessions": len(sessions)})
    await receive_from_runner(pipe, "resume")
    resumed, times, refused = await _resume_all(plan, credentials)
    pipe.send(
        {"kind": "resumed", "sessions": len(resumed), "resume_ms": times, "failures": dict(refused)}
    )
    await receive_from_runner(pipe, "close")
    await close_sessions(resumed, timeout_s=5.0)
    pipe.send({"kind": "closed"})


def lifecycle_client_main(plan: ConnectPlan, pipe: Connection) -> None:
    """Process entry point of a lifecycle client."""
    run_client_process(_lifecycle_client(plan, pipe), pipe)

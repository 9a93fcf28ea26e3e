"""Load-generating client processes.

Each client process runs its own uvloop event loop with many WebSocket
connections, so the load never shares the server's loop. The runner talks to
it over a :func:`multiprocessing.Pipe` with small dict messages::

    streaming: client -> {"kind": "connected"}   runner -> {"kind": "go", "start", "end"}
               client -> {"kind": "result", ...}
    idle:      client -> {"kind": "connected"}   runner -> {"kind": "close"}
               client -> {"kind": "closed"}

The streaming client is :mod:`loadtest.common.stream_client`; this module has what
every client shares (plans, opening and closing sessions, the process entry) and the
idle client.

Any failure is sent as ``{"kind": "error", "message": ...}``. Times are
``time.monotonic()`` values, which every process on the machine shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar, overload

import uvloop

from loadtest.common.wire import LeanConnection, open_connection

SESSION_START = json.dumps({"type": "session.start"})
_Connection = TypeVar("_Connection", bound=LeanConnection)
PIPE_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class ConnectPlan:
    """Which server to reach and how to open sessions there."""

    url: str
    sessions: int
    concurrency: int = 64
    timeout_s: float = 30.0


@dataclass(slots=True)
class Window:
    """The measurement window, flipped by timers so the per-frame path reads one flag."""

    start: float
    end: float
    measuring: bool = False
    ended: bool = False


def raise_fd_limit() -> int:
    """Raise the soft open-files limit to the hard limit; returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # An unlimited hard limit still stops at the kernel's nr_open; ask for a sane number.
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft
    return target


# -- opening sessions ----------------------------------------------------------


@overload
async def open_session(url: str, timeout_s: float) -> LeanConnection: ...


@overload
async def open_session(
    url: str, timeout_s: float, start: str, kind: Callable[[str, int, str], _Connection]
) -> _Connection: ...


async def open_session(
    url: str,
    timeout_s: float,
    start: str = SESSION_START,
    kind: Callable[[str, int, str], LeanConnection] = LeanConnection,
) -> LeanConnection:
    """Connect, send ``start`` (a ``session.start``) and wait for ``session.ready``."""
    connection = await open_connection(url, timeout_s, kind)
    try:
        connection.send_text(start)
        ready = await asyncio.wait_for(asyncio.shield(connection.first_text), timeout_s)
    except BaseException:
        await connection.close(1.0)
        raise
    if not ready.startswith('{"type":"session.ready"'):
        await connection.close(1.0)
        raise RuntimeError(f"expected session.ready, got {ready[:160]}")
    return connection


async def open_sessions(plan: ConnectPlan) -> tuple[list[LeanConnection], Counter[str]]:
    """Open ``plan.sessions`` sessions, at most ``plan.concurrency`` handshakes at a time."""
    gate = asyncio.Semaphore(plan.concurrency)

    async def one() -> LeanConnection:
        async with gate:
            return await open_session(plan.url, plan.timeout_s)

    outcomes = await asyncio.gather(*(one() for _ in range(plan.sessions)), return_exceptions=True)
    sessions = [o for o in outcomes if isinstance(o, LeanConnection)]
    failures: Counter[str] = Counter(
        f"{type(o).__name__}: {o}"[:160] for o in outcomes if isinstance(o, BaseException)
    )
    return sessions, failures


async def close_sessions(sessions: list[LeanConnection], timeout_s: float) -> None:
    """Close every connection with a close frame (an explicit close aborts its work)."""
    await asyncio.gather(*(c.close(timeout_s) for c in sessions), return_exceptions=True)


# -- idle sessions ---------------------------------------------------------------


async def _idle_client(plan: ConnectPlan, pipe: Connection) -> None:
    sessions, failures = await open_sessions(plan)
    pipe.send({"kind": "connected", "sessions": len(sessions), "failures": dict(failures)})
    await receive_from_runner(pipe, "close")
    # The runner stops the server first; a short bounded close is enough.
    await close_sessions(sessions, timeout_s=2.0)
    pipe.send({"kind": "closed"})


# -- process entry points --------------------------------------------------------


async def receive_from_runner(pipe: Connection, kind: str) -> dict[str, Any]:
    """Wait (off the event loop) for the runner's next message, which must be ``kind``."""
    loop = asyncio.get_running_loop()
    ready = await loop.run_in_executor(None, pipe.poll, PIPE_TIMEOUT_S)
    if not ready:
        raise TimeoutError(f"no {kind!r} from the runner within {PIPE_TIMEOUT_S:.0f}s")
    message: dict[str, Any] = pipe.recv()
    if message.get("kind") != kind:
        raise RuntimeError(f"expected {kind!r} from the runner, got {message.get('kind')!r}")
    return message


def run_client_process(coro: Any, pipe: Connection) -> None:
    raise_fd_limit()
    try:
        uvloop.run(coro)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            pipe.send({"kind": "error", "message": f"{exc!r}\n{traceback.format_exc()}"})
        raise
    finally:
        pipe.close()


def idle_client_main(plan: ConnectPlan, pipe: Connection) -> None:
    """Process entry point of an idle-sessions client."""
    run_client_process(_idle_client(plan, pipe), pipe)

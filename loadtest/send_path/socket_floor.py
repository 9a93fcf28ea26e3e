"""The socket floor: what one frame per token costs a server with no WebSocket code at all.

``python -m loadtest.send_path.socket_floor`` accepts N loopback TCP connections from a
reader process of its own (which drains them and sends nothing) and, on a decode clock
of ``--decode-rate`` steps per second, writes one frame to every connection per step
— a server text frame of the size of a text delta, its header built per frame as the
fast send path builds it — straight to the uvloop transport. A connection whose
transport holds more than ``--write-limit`` bytes unsent is skipped that step (the
worker's backpressure: its tokens would merge), so the writer never runs more than that
ahead of the kernel on any connection (the reader keeps up: a frame normally goes to the
kernel in its own ``send()``). Steps missed while behind are not made up: a saturated
writer writes as fast as it can. It prints one JSON object: frames written and CPU
(user, system) per frame. The reader ends with its connections (the writer's end, even
by SIGKILL, closes them); a reader that ends first ends the measurement with an error.

No server that writes one frame per token per connection can cost less than this per
token on the same machine: it is the kernel's ``send()`` and the event loop's least
work, nothing else. The send-path benchmark measures it once per round beside the
bare websockets server, with the session work per token (:mod:`.session_work`); the
two together bound what any send path can reach against the bare server in that round.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import sys
import time
from collections.abc import Sequence
from typing import Any, cast

import uvloop

from loadtest.common.clients import raise_fd_limit

# A text delta as the worker writes it (~80 bytes of JSON), behind its 2-byte header.
_PAYLOAD = b'{"type":"response.text.delta","seq":123456,"response_id":"r-0001","delta":" word"}'


def _cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


class _Accepted(asyncio.Protocol):
    """One accepted connection: its transport goes to the writer; it reads nothing."""

    def __init__(
        self, transports: list[asyncio.WriteTransport], ready: asyncio.Event, lost: asyncio.Event
    ) -> None:
        self.transports = transports
        self.ready = ready
        self.lost = lost
        self.wanted = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio's classes, only their interface.
        self.transports.append(cast(asyncio.WriteTransport, transport))
        if len(self.transports) >= self.wanted:
            self.ready.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set()


def _frame(payload: bytes) -> bytes:
    # The fast send path's header, built per frame (final text frame, unmasked, < 126).
    return bytes((0x81, len(payload))) + payload


async def _write(sessions: int, rate: float, seconds: float, warmup: float, limit: int) -> Any:
    loop = asyncio.get_running_loop()
    transports: list[asyncio.WriteTransport] = []
    ready, lost = asyncio.Event(), asyncio.Event()

    def accepted() -> _Accepted:
        protocol = _Accepted(transports, ready, lost)
        protocol.wanted = sessions
        return protocol

    server = await loop.create_server(accepted, "127.0.0.1", 0, backlog=sessions)
    port = server.sockets[0].getsockname()[1]
    command = [sys.executable, "-m", "loadtest.send_path.socket_floor", "--read", str(port)]
    reader = await asyncio.create_subprocess_exec(*command, "--sessions", str(sessions))
    try:
        await _connected(ready, reader)
        interval = 1.0 / rate
        counted = False
        frames = 0
        started = next_step = time.monotonic()
        before = _cpu()
        while True:
            now = time.monotonic()
            if not counted and now - started >= warmup:
                counted, frames, before, measured_from = True, 0, _cpu(), now
            if counted and now - measured_from >= seconds:
                break
            if lost.is_set():
                raise ReaderGone("the reader process's connections closed mid-measurement")
            for transport in transports:
                if transport.get_write_buffer_size() <= limit:
                    transport.write(_frame(_PAYLOAD))
                    frames += 1
            next_step = max(next_step + interval, now)
            await asyncio.sleep(max(0.0, next_step - time.monotonic()))
        after, measured = _cpu(), time.monotonic() - measured_from
    finally:
        server.close()
        for transport in transports:
            transport.abort()
        with contextlib.suppress(ProcessLookupError):
            reader.kill()
        await reader.wait()
    user, system = after[0] - before[0], after[1] - before[1]
    return {
        "sessions": sessions,
        "decode_rate": rate,
        "seconds": round(measured, 3),
        "frames": frames,
        "frames_per_s": round(frames / measured),
        "cpu_us_per_frame": round((user + system) / frames * 1e6, 2) if frames else None,
        "user_us_per_frame": round(user / frames * 1e6, 2) if frames else None,
        "system_us_per_frame": round(system / frames * 1e6, 2) if frames else None,
    }


class ReaderGone(RuntimeError):
    """The reader process ended (or could not connect) before the measurement did."""


async def _connected(ready: asyncio.Event, reader: asyncio.subprocess.Process) -> None:
    """Wait for every connection, or fail at once if the reader ends first (60 s at most)."""
    connecting = asyncio.ensure_future(ready.wait())
    ended = asyncio.ensure_future(reader.wait())
    done, _ = await asyncio.wait((connecting, ended), timeout=60, return_when="FIRST_COMPLETED")
    connecting.cancel()
    ended.cancel()
    if connecting not in done:
        status = reader.returncode
        raise ReaderGone(f"the reader did not connect (it ended with {status})")


class _Drain(asyncio.Protocol):
    def __init__(self, closed: asyncio.Future[None]) -> None:
        self.closed = closed

    def data_received(self, data: bytes) -> None:
        """Read and forget (a client that keeps up)."""

    def connection_lost(self, exc: Exception | None) -> None:
        # The writer is done (or dead): nothing is left to read.
        if not self.closed.done():
            self.closed.set_result(None)


async def _read(port: int, sessions: int) -> None:
    loop = asyncio.get_running_loop()
    closed: asyncio.Future[None] = loop.create_future()
    connections = [
        await loop.create_connection(lambda: _Drain(closed), "127.0.0.1", port)
        for _ in range(sessions)
    ]
    await closed
    del connections


def main(argv: Sequence[str] | None = None) -> int:
    """Print the measurement as one JSON object (``--read PORT``: be the reader)."""
    parser = argparse.ArgumentParser(prog="python -m loadtest.send_path.socket_floor")
    parser.add_argument("--sessions", type=int, default=1000, help="connections (1000)")
    parser.add_argument("--decode-rate", type=float, default=50.0, help="steps/s (50)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds (3)")
    parser.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds (0.5)")
    parser.add_argument(
        "--write-limit", type=int, default=32768, help="skip a connection past this (32768)"
    )
    parser.add_argument("--read", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.seconds <= 0 or args.decode_rate <= 0 or args.warmup < 0:
        parser.error("--sessions must be >= 1, --seconds and --decode-rate > 0, --warmup >= 0")
    raise_fd_limit()
    sessions = args.sessions
    if args.read is not None:
        uvloop.run(_read(args.read, sessions))
        return 0
    try:
        result = uvloop.run(
            _write(sessions, args.decode_rate, args.seconds, args.warmup, args.write_limit)
        )
    except ReaderGone as exc:
        print(f"socket_floor: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

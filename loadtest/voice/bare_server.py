"""The voice baseline: a bare ``websockets`` server on uvloop that takes audio and drops it.

It answers ``session.start`` with ``session.ready`` and ``ping`` with ``pong``,
counts binary frames and their bytes, and does nothing else: no session, no
validation, no pacing check, no voice-activity detection, no events. Its CPU per
session is what receiving 50 audio frames a second over WebSocket costs at all,
the floor under the worker's figure.

Run it with ``python -m loadtest.voice.bare_server --port 0``; it prints
``voice bare server listening on ws://HOST:PORT`` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Sequence

import uvloop
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class Counters:
    """What the server received."""

    def __init__(self) -> None:
        self.frames = 0
        self.bytes = 0


async def _handle(ws: ServerConnection, counters: Counters) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for frame in ws:
            if isinstance(frame, bytes):
                counters.frames += 1
                counters.bytes += len(frame)
                continue
            try:
                message = json.loads(frame)
                kind = message["type"]
            except (ValueError, TypeError, KeyError):
                continue
            if kind == "ping":
                await ws.send(_ENCODER.encode({"type": "pong", "request_id": message.get("id")}))
            elif kind == "session.start":
                await ws.send(_ENCODER.encode({"type": "session.ready", "session_id": "bare"}))


async def _serve(args: argparse.Namespace) -> int:
    counters = Counters()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def handler(ws: ServerConnection) -> None:
        await _handle(ws, counters)

    async with serve(
        handler,
        args.host,
        args.port,
        compression=None,
        max_size=1 << 20,
        write_limit=64 * 1024,  # the worker's default --write-limit
        backlog=args.backlog,
    ) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"voice bare server listening on ws://{args.host}:{port}", flush=True)
        await stop.wait()
    print(f"received {counters.frames} frames, {counters.bytes} bytes", flush=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Flags."""
    p = argparse.ArgumentParser(prog="python -m loadtest.voice.bare_server", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--backlog", type=int, default=2048)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return uvloop.run(_serve(build_parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())

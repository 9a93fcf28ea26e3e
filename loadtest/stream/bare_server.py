"""The baseline: a bare ``websockets`` server on uvloop that streams one frame per token.

It speaks just enough of the wire protocol for the benchmark client
(``session.start``, ``response.create``, ``response.interrupt``, ``ping``) and
does nothing else: no sessions to resume, no replay buffer, no outbox, no
validation models, no usage ledger. Tokens are paced by one shared decode
clock, the way the simulated engine's continuous-batching loop paces them, so
the worker and this server offer the same load.

Run it with ``python -m loadtest.stream.bare_server --port 0``; it prints
``bare server listening on ws://HOST:PORT`` once it accepts connections and
answers ``GET /stats`` with JSON counters.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

import uvloop
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

_VOCABULARY = """
the of to and in that it is was for on are as with they be at one have this from or had
by word but what some we can out other were all there when up use your how said an each
"""
_WORDS = tuple(_VOCABULARY.split())

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


class DecodeClock:
    """One shared decode loop: every step wakes every stream waiting for a token.

    Like the simulated engine, a late step is dropped rather than burst to
    catch up, and the loop sleeps while nobody waits.
    """

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.steps = 0
        self._tick: asyncio.Future[None] | None = None
        self._wanted = asyncio.Event()

    def next_step(self) -> asyncio.Future[None]:
        """A future resolved at the next decode step (shared by every waiter)."""
        if self._tick is None:
            self._tick = asyncio.get_running_loop().create_future()
            self._wanted.set()
        return self._tick

    async def run(self) -> None:
        """Tick at the decode rate while anybody waits; runs until cancelled."""
        loop = asyncio.get_running_loop()
        next_step = loop.time()
        while True:
            if self._tick is None:
                self._wanted.clear()
                await self._wanted.wait()
                # Streams re-arm right after a step: keep its cadence, don't step at once.
                next_step = max(next_step, loop.time())
            now = loop.time()
            if next_step > now:
                await asyncio.sleep(next_step - now)
                now = loop.time()
            next_step += self.interval
            if next_step < now:
                next_step = now + self.interval
            tick, self._tick = self._tick, None
            self.steps += 1
            if tick is not None and not tick.done():
                tick.set_result(None)


class Stream:
    """One response being streamed."""

    __slots__ = ("delivered", "response_id", "stopped")

    def __init__(self, response_id: str) -> None:
        self.response_id = response_id
        self.delivered = 0
        self.stopped = False


class BareConnection:
    """Handles one client: a reader that answers control, and one stream task at a time."""

    def __init__(self, ws: ServerConnection, app: BareServer) -> None:
        self.ws = ws
        self.app = app
        self.seq = 0
        self.responses = 0
        self.stream: Stream | None = None

    async def send_event(self, type_: str, **fields: Any) -> None:
        """Send one event with the next ``seq``, in the worker's field order."""
        self.seq += 1
        message: dict[str, Any] = {"type": type_, "seq": self.seq}
        message.update(fields)
        await self.ws.send(_ENCODER.encode(message))

    async def on_frame(self, frame: str | bytes) -> None:
        """Dispatch one client message."""
        try:
            message = json.loads(frame)
            kind = message["type"]
        except (ValueError, TypeError, KeyError):
            await self.ws.send(_ENCODER.encode({"type": "error", "code": "invalid_message"}))
            return
        if kind == "ping":
            await self.ws.send(_ENCODER.encode({"type": "pong", "request_id": message.get("id")}))
        elif kind == "session.start":
            await self.ws.send(_ENCODER.encode({"type": "session.ready", "session_id": "bare"}))
        elif kind == "response.create":
            await self._create()
        elif kind == "response.interrupt":
            await self._interrupt()
        else:
            await self.send_event("error", code="unknown_type", message=str(kind)[:64])

    async def _create(self) -> None:
        if self.stream is not None and not self.stream.stopped:
            await self.send_event("error", code="response_in_progress")
            return
        self.responses += 1
        stream = Stream(f"resp_{self.responses}")
        self.stream = stream
        await self.send_event("response.created", response_id=stream.response_id)
        self.app.spawn(self._produce(stream))

    async def _interrupt(self) -> None:
        stream = self.stream
        if stream is None or stream.stopped:
            await self.send_event("error", code="no_active_response")
            return
        # The producer sees the flag at its next step and sends nothing more.
        stream.stopped = True
        await self._done(stream, "interrupted")

    async def _produce(self, stream: Stream) -> None:
        app = self.app
        try:
            if app.prefill_s > 0:
                await asyncio.sleep(app.prefill_s)
            for index in range(app.answer_tokens):
                await app.clock.next_step()
                if stream.stopped:
                    return
                word = _WORDS[(self.responses + index) % len(_WORDS)]
                stream.delivered += 1
                app.tokens_sent += 1
                await self.send_event(
                    "response.text.delta",
                    response_id=stream.response_id,
                    delta=word if index == 0 else " " + word,
                )
            if not stream.stopped:
                stream.stopped = True
                await self._done(stream, "completed")
        except ConnectionClosed:
            stream.stopped = True

    async def _done(self, stream: Stream, status: str) -> None:
        usage = {
            "input_tokens": 0,
            "output_tokens_generated": stream.delivered,
            "output_tokens_delivered": stream.delivered,
        }
        await self.send_event(
            "response.done", response_id=stream.response_id, status=status, usage=usage
        )


class BareServer:
    """The listener, the decode clock and a few counters."""

    connection_class: type[BareConnection] = BareConnection
    """What serves each connection (a subclass may speak more of the protocol)."""

    def __init__(self, *, decode_rate: float, answer_tokens: int, prefill_ms: float) -> None:
        self.clock = DecodeClock(decode_rate)
        self.answer_tokens = answer_tokens
        self.prefill_s = prefill_ms / 1000.0
        self.connections = 0
        self.tokens_sent = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Any) -> None:
        """Run a background task and keep a reference until it ends."""
        task: asyncio.Task[None] = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def handle(self, ws: ServerConnection) -> None:
        """Serve one connection until it closes."""
        connection = self.connection_class(ws, self)
        self.connections += 1
        try:
            async for frame in ws:
                await connection.on_frame(frame)
        except ConnectionClosed:
            pass
        finally:
            self.connections -= 1
            if connection.stream is not None:
                connection.stream.stopped = True

    def stats(self) -> dict[str, int]:
        """Counters served at ``GET /stats``."""
        return {
            "connections": self.connections,
            "streams": len(self._tasks),
            "steps": self.clock.steps,
            "tokens_sent": self.tokens_sent,
        }

    def process_request(self, ws: ServerConnection, request: Request) -> Response | None:
        """Answer ``GET /stats``; let every other request upgrade."""
        if request.path.split("?", 1)[0] == "/stats":
            return ws.respond(HTTPStatus.OK, json.dumps(self.stats()) + "\n")
        return None


async def serve_bare(args: argparse.Namespace) -> int:
    """Run until SIGINT or SIGTERM."""
    app = BareServer(
        decode_rate=args.decode_rate, answer_tokens=args.answer_tokens, prefill_ms=args.prefill_ms
    )
    clock = asyncio.create_task(app.clock.run(), name="decode-clock")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with serve(
        app.handle,
        args.host,
        args.port,
        process_request=app.process_request,
        compression=None,
        max_size=1 << 20,
        write_limit=64 * 1024,  # the worker's default --write-limit
    ) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"bare server listening on ws://{args.host}:{port}", flush=True)
        await stop.wait()
    clock.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await clock
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Command-line flags, named like ``wsserver serve``'s."""
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.stream.bare_server",
        description="Baseline server: one JSON text frame per token, nothing else.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    parser.add_argument("--decode-rate", type=float, default=50.0, help="tokens/s per response")
    parser.add_argument("--answer-tokens", type=int, default=100, help="tokens per response")
    parser.add_argument(
        "--prefill-ms",
        type=float,
        default=20.0,
        help="delay before the first decode step (the simulated engine's prefill base)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    if args.decode_rate <= 0 or args.answer_tokens < 1:
        print("decode rate must be > 0 and answer tokens >= 1", file=sys.stderr)
        return 2
    return uvloop.run(serve_bare(args))


if __name__ == "__main__":
    sys.exit(main())

"""Command line: ``wsserver serve``, ``chat``, ``router``, ``usage`` and ``keys``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from wsserver.cli.chat import run_chat
from wsserver.cli.demo import run_demo
from wsserver.cli.keys import add_keys_parser, run_keys
from wsserver.cli.router import add_router_parser, run_router
from wsserver.cli.usage import print_usage
from wsserver.cli.voice_chat import run_voice_chat
from wsserver.client.auth import API_KEY_ENV, CLIENT_TOKEN_ENV
from wsserver.frontdoor.errors import FrontDoorConfigError
from wsserver.frontdoor.redaction import install_redaction
from wsserver.worker.settings import ENV_PREFIX, Settings


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="wsserver",
        description="WebSocket session server for voice assistants, tool-loop UIs and mobile "
        "clients: streamed answers, interrupts, resume after a dropped connection.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="run a worker",
        description="Run a worker with the simulated engine and the in-memory store, or "
        "with --store redis://HOST:PORT/DB a store shared by every worker, so a session "
        "resumes on any of them. Every flag can also be set as an environment variable "
        f"{ENV_PREFIX}<FLAG> (for example WSSERVER_PORT=9000, "
        "WSSERVER_STORE=redis://127.0.0.1:6379/0); flags win.",
    )
    for name, info in Settings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        help_text = f"{info.description} [env {ENV_PREFIX}{name.upper()}]"
        if info.annotation is bool:
            serve.add_argument(
                flag,
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=help_text,
            )
        else:
            serve.add_argument(
                flag,
                dest=name,
                default=None,
                metavar=name.upper(),
                help=f"{help_text} (default: {info.default})",
            )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="after starting, run a short demo session against this server and print it",
    )
    serve.add_argument("--log-level", default="INFO", help="logging level")

    chat = commands.add_parser(
        "chat",
        help="chat with a server from the terminal",
        description="Stream an answer. With PROMPT, print it and exit 0 after response.done. "
        "Without PROMPT, an interactive chat: type a line to ask, press Enter while an "
        "answer streams to interrupt it, Ctrl-D to quit.",
    )
    chat.add_argument("prompt", nargs="?", metavar="PROMPT", help="one question to ask")
    chat.add_argument("--url", default="ws://127.0.0.1:8765", help="server URL")
    chat.add_argument(
        "--encoding", choices=("json", "msgpack"), default="json", help="wire encoding"
    )
    chat.add_argument("--instructions", default=None, help="system instructions")
    chat.add_argument(
        "--max-output-tokens", type=int, default=None, help="upper bound on the answer length"
    )
    chat.add_argument(
        "--open-timeout",
        type=float,
        default=5.0,
        help="seconds to keep trying to open the session",
    )
    chat.add_argument("--verbose", action="store_true", help="also print every event (seq, type)")
    add_credential_arguments(chat)
    chat.add_argument(
        "--tools",
        action="store_true",
        help="declare a demo tool set (get_weather, get_time) and answer the model's calls "
        "from it; try: wsserver chat --tools 'weather in Paris and Oslo?'",
    )
    chat.add_argument(
        "--audio-in",
        metavar="FILE.wav",
        default=None,
        help="stream a WAV file (mono PCM16, 16 or 24 kHz) as the microphone at real-time pace; "
        "with PROMPT it starts --audio-delay seconds into the spoken answer (a barge-in); "
        "exits 0 when the spoken turn is answered",
    )
    chat.add_argument(
        "--audio-out",
        metavar="FILE.wav",
        default=None,
        help="with --audio-in: write the spoken answer to a WAV file",
    )
    chat.add_argument(
        "--audio-delay",
        type=float,
        default=None,
        help="with --audio-in: seconds before the file starts (default 1 with PROMPT, else 0)",
    )
    chat.add_argument(
        "--turn-detection",
        choices=("server_vad", "manual"),
        default="server_vad",
        help="with --audio-in: the server finds the turn (server_vad), or the end of the file "
        "commits it (manual)",
    )
    add_router_parser(commands)
    usage = commands.add_parser(
        "usage",
        help="print a session's usage ledger",
        description="Print every response's usage (input, generated, delivered and wasted "
        "tokens) and the session totals, read from the session store (--store) or from a "
        "running worker's /usage endpoint (--url). The ledger outlives the session.",
    )
    usage.add_argument("session_id", metavar="SESSION_ID")
    source = usage.add_mutually_exclusive_group()
    source.add_argument(
        "--store",
        default=None,
        help=f"redis://HOST:PORT/DB to read directly [env {ENV_PREFIX}STORE]",
    )
    source.add_argument(
        "--url", default=None, help="a worker's base URL, e.g. http://127.0.0.1:8765"
    )
    usage.add_argument(
        "--api-key",
        default=None,
        help=f"with --url: an API key or JWT for the worker's /usage endpoint, sent as "
        f"Authorization: Bearer (prefer the environment: [env {API_KEY_ENV}])",
    )
    usage.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_keys_parser(commands)
    return parser


def add_credential_arguments(parser: argparse.ArgumentParser) -> None:
    """``--api-key`` and ``--client-token`` of the SDK's commands (flags show in ``ps``)."""
    parser.add_argument(
        "--api-key",
        default=None,
        help="an API key or a JWT, sent as Authorization: Bearer (prefer the environment: "
        f"[env {API_KEY_ENV}])",
    )
    parser.add_argument(
        "--client-token",
        default=None,
        help="a short-lived client token minted by your backend, sent as the WebSocket "
        f"subprotocol wsserver.token.<token> [env {CLIENT_TOKEN_ENV}]",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``wsserver`` command."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "router":
        return run_router(args)
    if args.command == "usage":
        return _run(print_usage(args))
    if args.command == "keys":
        return run_keys(args)
    if args.audio_in is not None:
        return _run(run_voice_chat(args))
    return _run(run_chat(args))


def _serve(args: argparse.Namespace) -> int:
    overrides = {name: getattr(args, name) for name in Settings.model_fields}
    try:
        settings = Settings.from_env(overrides)
    except ValidationError as exc:
        print(f"wsserver serve: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    install_redaction()
    # Per-connection open/close lines drown everything else at any real load.
    logging.getLogger("websockets").setLevel(max(logging.WARNING, logging.root.level))
    return _run(_serve_async(settings, demo=args.demo))


async def _serve_async(settings: Settings, *, demo: bool) -> int:
    from wsserver.audio.silero import VadUnavailable
    from wsserver.worker.server import WorkerServer

    try:
        server = WorkerServer(settings)
    except (VadUnavailable, FrontDoorConfigError) as exc:
        print(f"wsserver serve: {exc}", file=sys.stderr)
        return 2
    await server.start()
    # Every token allocates a few short-lived objects; with the default thresholds the
    # collector runs full passes over every session's objects often enough to stall
    # the loop for 100+ ms. Fewer, younger-only passes keep p99 latency flat.
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    url = f"{'wss' if server.tls is not None else 'ws'}://{settings.host}:{server.port}"
    store = settings.store.split("@")[-1]  # never print credentials
    print(
        f"wsserver listening on {url} (worker {server.worker_id}, store: {store}, "
        f"engine: {settings.engine})",
        flush=True,
    )
    stop = asyncio.Event()
    force = asyncio.Event()

    def on_signal() -> None:
        # The first signal drains; a second one cuts the wait short.
        (force if stop.is_set() else stop).set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    if demo and server.authenticator.required:
        # The demo client has no credential to present.
        print(
            "--demo runs only without authentication (--auth none, or on loopback with "
            "no credentials configured); skipped",
            flush=True,
        )
    elif demo:
        await run_demo(url)
        print(f"\nthe server keeps running on {url}; press Ctrl-C to stop", flush=True)
    await stop.wait()
    print(
        f"draining: running responses get up to {settings.drain_timeout:g} s, then clients "
        "reconnect elsewhere (a second signal forces)",
        flush=True,
    )
    await server.drain(settings.drain_timeout, force)
    print("stopped", flush=True)
    return 0


def _run(coro: Any) -> int:
    try:
        import uvloop
    except ImportError:
        result: int = asyncio.run(coro)
    else:
        result = uvloop.run(coro)
    return result


if __name__ == "__main__":
    sys.exit(main())

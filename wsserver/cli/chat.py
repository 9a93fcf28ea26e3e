"""``wsserver chat``: a terminal client built on the SDK (``--audio-in``: :mod:`.voice_chat`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from typing import Any

from wsserver.cli.demo_tools import DEMO_TOOLS
from wsserver.cli.session_opening import CommandFailed, opened_client
from wsserver.client import SessionClient, SessionClosed
from wsserver.client.auth import API_KEY_ENV, CLIENT_TOKEN_ENV


def add_chat_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``chat``: one question, an interactive chat, or a WAV file as the microphone."""
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


def stdin_lines(loop: asyncio.AbstractEventLoop) -> asyncio.Queue[str | None]:
    """Lines typed on stdin, read by a thread (``None`` at end of input)."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def reader() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\n"))
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=reader, daemon=True).start()
    return queue


def _print_event(event: dict[str, Any], verbose: bool) -> None:
    kind = event.get("type")
    if verbose:
        print(f"\n[{event.get('seq', '-')}] {kind}", file=sys.stderr, flush=True)
    if kind == "response.text.delta":
        print(event["delta"], end="", flush=True)
    elif kind == "response.done":
        usage = event.get("usage", {})
        reason = f" ({event['reason']})" if event.get("reason") else ""
        print(
            f"\n[{event['status']}{reason}; tokens in {usage.get('input_tokens', 0)}, "
            f"generated {usage.get('output_tokens_generated', 0)}, "
            f"delivered {usage.get('output_tokens_delivered', 0)}]",
            flush=True,
        )
    elif kind == "response.tool_call":
        print(f"\n[tool call {event['name']} {json.dumps(event['arguments'])}]", flush=True)
    elif kind == "tool.result.accepted":
        print(f"[tool result sent for {event['call_id']}]", flush=True)
    elif kind == "response.output_json.done":
        print(f"\n[json {json.dumps(event['value'])}]", flush=True)
    elif kind == "response.truncated":
        print(f"\n[truncated: {event.get('reason')}]", flush=True)
    elif kind == "error":
        print(f"\n[error {event.get('code')}: {event.get('message')}]", flush=True)


async def run_chat(args: argparse.Namespace) -> int:
    """One question (exit 0 after ``response.done``) or an interactive chat."""
    try:
        client = await opened_client(args, tools=DEMO_TOOLS if args.tools else None)
    except CommandFailed as failed:
        return failed.status
    try:
        if args.prompt is not None:
            return await _one_shot(client, args.prompt, args.verbose)
        return await _interactive(client, args.verbose)
    finally:
        await client.close()


async def _one_shot(client: SessionClient, prompt: str, verbose: bool) -> int:
    await client.create_response(prompt)
    try:
        while True:
            event = await client.next_event()
            _print_event(event, verbose)
            if event.get("type") == "response.done":
                return 0 if event.get("status") in ("completed", "incomplete") else 1
            if event.get("type") in ("response.truncated",):
                return 1
            if event.get("type") == "error":
                return 1
    except SessionClosed as exc:
        print(f"\nwsserver chat: {exc}", file=sys.stderr)
        return 1


async def _interactive(client: SessionClient, verbose: bool) -> int:
    loop = asyncio.get_running_loop()
    lines = stdin_lines(loop)
    print(
        f"session {client.session_id}. Type a message; Enter while an answer streams "
        "interrupts it; Ctrl-D quits.",
        flush=True,
    )
    streaming = False
    printed = 0
    events = asyncio.ensure_future(client.next_event())
    typed = asyncio.ensure_future(lines.get())
    try:
        while True:
            done, _ = await asyncio.wait({events, typed}, return_when=asyncio.FIRST_COMPLETED)
            if events in done:
                try:
                    event = events.result()
                except SessionClosed as exc:
                    print(f"\n{exc}", flush=True)
                    return 1
                _print_event(event, verbose)
                kind = event.get("type")
                if kind == "response.created":
                    streaming, printed = True, 0
                elif kind == "response.text.delta":
                    printed += len(event["delta"])
                elif kind in ("response.done", "response.truncated"):
                    streaming = False
                    print("> ", end="", flush=True)
                events = asyncio.ensure_future(client.next_event())
            if typed in done:
                line = typed.result()
                if line is None:
                    return 0
                if streaming:
                    await client.interrupt(rendered_chars=printed)
                elif line.strip():
                    await client.create_response(line)
                typed = asyncio.ensure_future(lines.get())
    finally:
        events.cancel()
        typed.cancel()

"""``wsserver chat``: a terminal client built on the SDK."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from typing import Any

from wsserver.cli.demo_tools import DEMO_TOOLS
from wsserver.client.session_client import ClientError, SessionClient, SessionClosed


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
        client = SessionClient(
            args.url,
            encoding=args.encoding,
            instructions=args.instructions,
            max_output_tokens=args.max_output_tokens,
            open_timeout=args.open_timeout,
            api_key=args.api_key,
            client_token=args.client_token,
            tools=DEMO_TOOLS if args.tools else None,
        )
    except ValueError as exc:
        # A key or token the handshake cannot carry (the message never shows it).
        print(f"wsserver chat: {exc}", file=sys.stderr)
        return 2
    try:
        await client.open()
    except (OSError, ClientError, TimeoutError) as exc:
        print(f"wsserver chat: cannot open a session at {args.url}: {exc}", file=sys.stderr)
        return 1
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

"""Opening the SDK session a ``wsserver chat`` run talks through (text or voice)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wsserver.client import ClientError, SessionClient


class CommandFailed(Exception):
    """The command cannot go on; why was printed. ``status`` is its exit status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


async def opened_client(args: argparse.Namespace, **options: Any) -> SessionClient:
    """A :class:`SessionClient` for the chat flags (and ``options``), its session open.

    Raises :class:`CommandFailed` (2 for credentials the handshake cannot carry, 1 for
    a server that does not open a session) after printing why.
    """
    try:
        client = SessionClient(
            args.url,
            encoding=args.encoding,
            instructions=args.instructions,
            max_output_tokens=args.max_output_tokens,
            open_timeout=args.open_timeout,
            api_key=args.api_key,
            client_token=args.client_token,
            **options,
        )
    except ValueError as exc:
        # A key or token the handshake cannot carry (the message never shows it).
        print(f"wsserver chat: {exc}", file=sys.stderr)
        raise CommandFailed(2) from None
    try:
        await client.open()
    except (OSError, ClientError, TimeoutError) as exc:
        print(f"wsserver chat: cannot open a session at {args.url}: {exc}", file=sys.stderr)
        raise CommandFailed(1) from None
    return client

"""The ``wsserver`` command: parse the arguments and run the subcommand they name.

Each subcommand lives in its own module, which adds its parser and runs it:
``serve`` (:mod:`.serve`), ``chat`` (:mod:`.chat`, with ``--audio-in`` :mod:`.voice_chat`),
``router`` (:mod:`.router`), ``usage`` (:mod:`.usage`) and ``keys`` (:mod:`.keys`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from wsserver.cli.chat import add_chat_parser, run_chat
from wsserver.cli.event_loop import run_command
from wsserver.cli.keys import add_keys_parser, run_keys
from wsserver.cli.router import add_router_parser, run_router
from wsserver.cli.serve import add_serve_parser, run_serve
from wsserver.cli.usage import add_usage_parser, run_usage
from wsserver.cli.voice_chat import run_voice_chat


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    parser = argparse.ArgumentParser(
        prog="wsserver",
        description="WebSocket session server for voice assistants, tool-loop UIs and mobile "
        "clients: streamed answers, interrupts, resume after a dropped connection.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_serve_parser(commands)
    add_chat_parser(commands)
    add_router_parser(commands)
    add_usage_parser(commands)
    add_keys_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``wsserver`` command; the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "router":
        return run_router(args)
    if args.command == "usage":
        return run_command(run_usage(args))
    if args.command == "keys":
        return run_keys(args)
    if args.audio_in is not None:
        return run_command(run_voice_chat(args))
    return run_command(run_chat(args))


if __name__ == "__main__":
    sys.exit(main())

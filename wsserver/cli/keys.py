"""Command line: ``wsserver keys new`` and ``wsserver keys hash``.

``new`` makes a random key and prints it once, on stdout; with ``--keys-file``
it appends the key's hashed line there (created readable by its owner only).
``hash`` reads an existing key from stdin (never from argv, which ``ps`` shows)
and prints its keys-file line.
"""

from __future__ import annotations

import argparse
import os
import sys

from wsserver.frontdoor.api_keys import check_principal_name, key_line, new_api_key


def add_keys_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``keys new`` and ``keys hash``."""
    keys = commands.add_parser(
        "keys",
        help="make API keys and their keys-file lines",
        description="API keys are given to backends; the worker and router keep only their "
        "SHA-256 hashes, in the file of --api-keys-file (one 'PRINCIPAL: SHA256-HEX [admin]' "
        "line per key).",
    )
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    new = actions.add_parser(
        "new",
        help="make a new key; print it once",
        description="Print a new random key on stdout. With --keys-file, append its hashed "
        "line to that file; without, print the line on stderr.",
    )
    hashed = actions.add_parser("hash", help="print the keys-file line of a key read from stdin")
    for action in (new, hashed):
        action.add_argument("--principal", required=True, help="who the key belongs to")
        action.add_argument(
            "--admin", action="store_true", help="the key may read /stats and any /usage/ID"
        )
    new.add_argument("--keys-file", default=None, help="append the hashed line to this file")


def run_keys(args: argparse.Namespace) -> int:
    """Run ``keys new`` or ``keys hash``; the exit status."""
    try:
        check_principal_name(args.principal)
    except ValueError as exc:
        print(f"wsserver keys: {exc}", file=sys.stderr)
        return 2
    if args.keys_command == "hash":
        key = sys.stdin.readline().strip()
        if not key:
            print("wsserver keys hash: no key on stdin", file=sys.stderr)
            return 2
        print(key_line(args.principal, key, admin=args.admin))
        return 0
    key = new_api_key()
    line = key_line(args.principal, key, admin=args.admin)
    if args.keys_file:
        try:
            fd = os.open(args.keys_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as file:
                file.write(line + "\n")
        except OSError as exc:
            print(f"wsserver keys: cannot write {args.keys_file}: {exc}", file=sys.stderr)
            return 1
    else:
        print(f"add this line to the keys file: {line}", file=sys.stderr)
    print(key)
    return 0

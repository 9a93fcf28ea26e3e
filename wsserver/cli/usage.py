"""``wsserver usage SESSION_ID``: print a session's usage ledger."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

from wsserver.client.auth import API_KEY_ENV
from wsserver.store.base import SessionStoreError, StoredDataUnreadable, StoreLimits
from wsserver.store.selector import open_store
from wsserver.worker.settings import ENV_PREFIX
from wsserver.worker.usage_report import format_usage, usage_report


def add_usage_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``usage SESSION_ID``: from the store (``--store``) or a worker (``--url``)."""
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
        help=f"redis://HOST:PORT/DB or redis+cluster://… to read [env {ENV_PREFIX}STORE]",
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


async def run_usage(args: argparse.Namespace) -> int:
    """Read the ledger from the store or a worker and print it; 1 if there is none."""
    store_url = args.store or (None if args.url else os.environ.get(ENV_PREFIX + "STORE"))
    try:
        if store_url and store_url != "memory":
            report = await _from_store(store_url, args.session_id)
        else:
            base = args.url or "http://127.0.0.1:8765"
            api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
            report = await asyncio.to_thread(_from_worker, base, args.session_id, api_key)
    except StoredDataUnreadable as exc:
        print(
            f"wsserver usage: the stored usage ledger of {args.session_id} is unreadable ({exc})",
            file=sys.stderr,
        )
        return 1
    except (SessionStoreError, OSError, ValueError) as exc:
        print(f"wsserver usage: {exc}", file=sys.stderr)
        return 1
    if report is None:
        print(f"wsserver usage: no usage recorded for {args.session_id}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else format_usage(report))
    return 0


async def _from_store(url: str, session_id: str) -> dict[str, Any] | None:
    store = open_store(url, StoreLimits(), timeout=2.0)
    try:
        entries = await store.usage(session_id)
    finally:
        await store.close()
    return usage_report(session_id, entries) if entries else None


def _from_worker(base: str, session_id: str, api_key: str | None) -> dict[str, Any] | None:
    url = base.rstrip("/").replace("ws://", "http://").replace("wss://", "https://")
    request = urllib.request.Request(f"{url}/usage/{session_id}")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            report: dict[str, Any] = json.load(response)
            return report
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        if exc.code in (401, 403):
            raise ValueError(f"the worker refused the credentials (http {exc.code})") from None
        raise ValueError(f"the worker answered http {exc.code}: {_error_of(exc)}") from None


def _error_of(exc: urllib.error.HTTPError) -> str:
    """The ``error`` of a worker's JSON answer, or the HTTP reason."""
    try:
        error = json.loads(exc.read(4096)).get("error")
    except (ValueError, AttributeError, OSError):
        error = None
    return error if isinstance(error, str) else str(exc.reason)

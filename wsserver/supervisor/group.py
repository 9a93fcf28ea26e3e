"""The parent of ``wsserver serve --workers N``: it starts, restarts and drains workers.

The parent serves no traffic. Every worker listens on the same port with SO_REUSEPORT
and the kernel spreads new connections over them; a session that reconnects to another
worker resumes there through the shared store (the takeover and fencing path of
docs/DEPLOY.md). Signals:

- SIGTERM or SIGINT: every worker drains at once (1012 and a hint to its clients);
  a second signal forces them; the exit status is the workers' (the first non-zero);
- SIGHUP: a rolling restart, one worker at a time: its replacement starts and is
  ready before the old one drains, so the port never has fewer than N listeners;
- a worker that exits on its own is restarted (with a growing delay if it keeps
  failing at startup); its sessions resume on the others meanwhile. So is one whose
  heartbeats stop for ``--worker-liveness-timeout`` (stopped or hung: its process is
  there, but the connections the kernel gives it get no answer): it is killed first.
  One that hangs while it starts is killed too, later, as a failed start.

Its output never blocks it (:mod:`wsserver.supervisor.console`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time

from wsserver.store.urls import printable_store_url
from wsserver.supervisor import console
from wsserver.supervisor.child import WorkerChild
from wsserver.supervisor.errors import SupervisorError
from wsserver.supervisor.heartbeat import HEARTBEAT_INTERVAL_S
from wsserver.supervisor.port import reserve_port
from wsserver.worker.server import default_worker_id
from wsserver.worker.settings import Settings

RESTART_DELAY_S = (0.2, 10.0)
"""First and longest delay before restarting a worker that exited on its own."""
STABLE_AFTER_S = 10.0
"""A worker that ran this long resets the delay: it was not a crash loop."""
MAX_FAILED_STARTS = 5
"""Workers in a row that exit before being ready before the group gives up."""
MIN_LIVENESS_TIMEOUT_S = 3.0
"""The shortest silence taken for a hung worker: three heartbeats."""
FINAL_OUTPUT_WAIT_S = 5.0
"""How long the group's last lines may wait for its output's reader before it exits."""


class WorkerGroup:
    """N worker processes on one port, and what the signals above do to them."""

    def __init__(self, settings: Settings, count: int, child_args: list[str]) -> None:
        self.settings = settings
        self.count = count
        self.child_args = child_args
        self.base_id = settings.worker_id or default_worker_id()
        self.slots: list[WorkerChild | None] = [None] * count
        self.restarts = [0] * count
        self.stopping = asyncio.Event()
        self.failed = asyncio.Event()
        self._failed_starts = 0
        self._quick_exits = 0
        """Workers in a row that exited on their own before STABLE_AFTER_S: a crash
        loop after readiness, which backs off like one before it."""
        self._signals = 0
        self._rolling: asyncio.Task[None] | None = None
        self._watchers: set[asyncio.Task[None]] = set()
        self._watches: set[asyncio.Task[None]] = set()
        """The tasks that restart a slot's worker when it exits (also among _watchers)."""
        self.live: set[WorkerChild] = set()
        """Every worker started and not yet exited, installed in a slot or not."""
        self.port = 0

    def child_settings(self, slot: int) -> Settings:
        """What worker ``slot`` runs with: the group's settings on the shared port."""
        generation = self.restarts[slot]
        suffix = f"-{slot}" if generation == 0 else f"-{slot}-r{generation}"
        admin = self.settings.admin_port
        return self.settings.model_copy(
            update={
                "port": self.port,
                "reuse_port": True,
                "workers": 1,
                "worker_id": self.base_id + suffix,
                # One admin listener per worker, so /stats and /metrics name one process.
                "admin_port": admin + slot if admin else 0,
            }
        )

    async def run(self) -> int:
        """Run until a signal stops the group; the exit status."""
        reserved = reserve_port(self.settings.host, self.settings.port)
        self.port = reserved.getsockname()[1]
        admin = self.settings.admin_port
        if admin and admin <= self.port < admin + self.count:
            reserved.close()
            # Both reuse the port: that worker's admin listener would take upgrades (404).
            raise SupervisorError(
                f"--admin-port {admin} gives the workers ports {admin}-{admin + self.count - 1}"
                f", which include the group's port {self.port}: choose another admin port"
            )
        if admin and admin + self.count - 1 > 65535:
            reserved.close()
            raise SupervisorError(
                f"--admin-port {admin} with --workers {self.count} needs ports "
                f"{admin}-{admin + self.count - 1}: choose an admin port of at most "
                f"{65536 - self.count}"
            )
        liveness = self.settings.worker_liveness_timeout
        if 0 < liveness < MIN_LIVENESS_TIMEOUT_S:
            reserved.close()
            raise SupervisorError(
                f"--worker-liveness-timeout {liveness:g} is shorter than three heartbeats "
                f"({MIN_LIVENESS_TIMEOUT_S:g} s): choose at least that, or 0 for none"
            )
        # Before any worker starts: a signal during startup is acted on once they are up.
        self._handle_signals()
        if liveness:
            # From the first start on: a worker that hangs while it starts is killed too.
            self._keep(asyncio.create_task(self._kill_the_silent(liveness), name="liveness"))
        try:
            children = [self._new_child(slot) for slot in range(self.count)]
            for child in children:
                await self._start(child)
            if not all(await asyncio.gather(*(c.wait_ready() for c in children))):
                for child in children:
                    child.retired = True
                    child.drain()
                codes = await asyncio.gather(*(c.wait() for c in children))
                console.say(
                    "wsserver serve: a worker failed to start; stopping the group", error=True
                )
                return next((code for code in codes if code), 1)
            for slot, child in enumerate(children):
                self._install(slot, child)
            self._print_banner()
            stop = asyncio.ensure_future(self.stopping.wait())
            failed = asyncio.ensure_future(self.failed.wait())
            await asyncio.wait((stop, failed), return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            failed.cancel()
            return await self._stop()
        finally:
            reserved.close()

    def _new_child(self, slot: int) -> WorkerChild:
        return WorkerChild(self.child_settings(slot), self.child_args)

    async def _start(self, child: WorkerChild) -> None:
        self.live.add(child)
        try:
            await child.start()
        except BaseException:
            # Cut short (a SIGTERM cancels a roll mid-spawn): asyncio ends the process
            # it forked; with no process there is nothing to drain or wait for.
            if child.process is None:
                self.live.discard(child)
            raise
        self._keep(asyncio.create_task(self._forget_on_exit(child)))

    async def _forget_on_exit(self, child: WorkerChild) -> None:
        await child.wait()
        self.live.discard(child)

    def _keep(self, task: asyncio.Task[None]) -> None:
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    def _install(self, slot: int, child: WorkerChild) -> None:
        self.slots[slot] = child
        watch = asyncio.create_task(self._watch(slot, child), name=f"watch {child.worker_id}")
        self._keep(watch)
        self._watches.add(watch)
        watch.add_done_callback(self._watches.discard)

    def _print_banner(self) -> None:
        settings = self.settings
        scheme = "wss" if settings.tls_enabled() else "ws"
        ids = ", ".join(c.worker_id for c in self.slots if c is not None)
        store = printable_store_url(settings.store)  # never print credentials
        console.say(
            f"wsserver listening on {scheme}://{settings.host}:{self.port} "
            f"({self.count} workers: {ids}; store: {store}, engine: {settings.engine}; "
            "SIGTERM drains, SIGHUP restarts them one at a time)"
        )
        pages = {c.demo_page_line for c in self.slots if c is not None and c.demo_page_line}
        for line in sorted(pages):  # one: the workers share the port
            console.say(line.rstrip("\n"))

    def _handle_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._on_stop_signal)
        loop.add_signal_handler(signal.SIGHUP, self._on_restart_signal)

    def _on_stop_signal(self) -> None:
        self._signals += 1
        if self._signals == 1:
            self.stopping.set()
        else:
            # A second signal: forward it, so the workers cut their drain short.
            for child in list(self.live):
                child.force()

    def _on_restart_signal(self) -> None:
        if self.stopping.is_set() or None in self.slots:
            console.say("SIGHUP ignored: the group is starting or stopping")
            return
        if self._rolling is not None and not self._rolling.done():
            console.say("rolling restart already under way; SIGHUP ignored")
            return
        self._rolling = asyncio.create_task(self.rolling_restart(), name="rolling restart")

    async def rolling_restart(self) -> None:
        """Replace each worker in turn: start the new one, then drain the old one."""
        console.say(f"rolling restart of {self.count} workers")
        for slot in range(self.count):
            if self.stopping.is_set():
                return
            new = await self._replacement(slot)
            if new is None:
                console.say(f"rolling restart stopped: worker {slot} did not start")
                return
            # Read after the wait: a dead worker's restart may have filled the slot meanwhile.
            old = self.slots[slot]
            if old is not None:
                old.retired = True
            self._install(slot, new)
            if old is not None:
                old.drain()
                await old.wait()
        console.say("rolling restart done")

    async def _replacement(self, slot: int) -> WorkerChild | None:
        self.restarts[slot] += 1
        child = self._new_child(slot)
        await self._start(child)
        if await child.wait_ready():
            self._failed_starts = 0
            return child
        await child.wait()
        self._failed_starts += 1
        return None

    async def _watch(self, slot: int, child: WorkerChild) -> None:
        code = await child.wait()
        if child.retired or self.stopping.is_set():
            return
        # Exited on its own (killed, crashed): its sessions resume on the others while
        # a new one starts; the delay grows while new ones keep failing at startup.
        ran = time.monotonic() - child.started_at
        self._quick_exits = 0 if ran > STABLE_AFTER_S else self._quick_exits + 1
        delay = self._restart_delay()
        console.say(
            f"worker {child.worker_id} exited with status {code}; restarting it in {delay:g} s"
        )
        while not self.stopping.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), delay)
            if self.stopping.is_set():
                return
            new = await self._replacement(slot)
            if new is not None:
                if self.slots[slot] is not child:
                    # A rolling restart refilled the slot meanwhile: one worker per slot.
                    new.retired = True
                    new.drain()
                elif not self.stopping.is_set():
                    self._install(slot, new)
                return
            if self._failed_starts >= MAX_FAILED_STARTS:
                console.say(f"worker {slot} failed to start {self._failed_starts} times; stopping")
                self.failed.set()
                return
            delay = self._restart_delay()

    async def _kill_the_silent(self, timeout: float) -> None:
        """Kill every worker (starting, serving, draining or being replaced) whose
        heartbeats stopped for ``timeout`` (longer while it starts: see
        :meth:`WorkerChild.allowed_silence`); its exit is then handled as a crash's, or
        as a failed start's."""
        while True:
            began = time.monotonic()
            await asyncio.sleep(HEARTBEAT_INTERVAL_S)
            if time.monotonic() - began > 2 * HEARTBEAT_INTERVAL_S:
                # This process was stalled itself: the beats it did not read meanwhile
                # are still in the pipes, and silence is counted afresh.
                for child in self.live:
                    child.forgive_silence()
                continue
            for child in [c for c in self.live if c.is_silent(timeout)]:
                child.kill()
                console.say(
                    f"worker {child.worker_id} (pid {child.pid}) sent no heartbeat for "
                    f"{child.allowed_silence(timeout):g} s (stopped or hung); killed it"
                )

    def _restart_delay(self) -> float:
        first, longest = RESTART_DELAY_S
        failures = max(self._failed_starts, self._quick_exits - 1)
        return float(min(longest, first * 2**failures))

    async def _stop(self) -> int:
        reason = "signal" if self.stopping.is_set() else "failures"
        self.stopping.set()
        # Nothing starts workers from now on: a roll, or a restart after a crash, that is
        # spawning one is cut short first, so the list below has every worker there is
        # (one half-spawned meanwhile would get no SIGTERM and hold the drain).
        starters = [*self._watches, *([self._rolling] if self._rolling is not None else [])]
        for starter in starters:
            starter.cancel()
        await asyncio.gather(*starters, return_exceptions=True)
        children = list(self.live)
        console.say(
            f"draining {len(children)} workers ({reason}): running responses get up to "
            f"{self.settings.drain_timeout:g} s (a second signal forces)"
        )
        for child in children:
            child.retired = True
            child.drain()
        exits = await asyncio.gather(*(c.wait() for c in children))
        # A worker still starting (a roll's replacement) has no SIGTERM handler yet: the
        # drain's signal ends it (143); that is the stop asked for, not a failure.
        codes = [
            code
            for child, code in zip(children, exits, strict=True)
            if child.ready.is_set() or code != 128 + signal.SIGTERM
        ]
        for watcher in list(self._watchers):
            watcher.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        console.say("stopped")
        if reason == "failures":
            return 1
        return next((code for code in codes if code), 0)


async def run_group(settings: Settings, count: int, child_args: list[str]) -> int:
    """``wsserver serve --workers N`` with N > 1; the exit status."""
    try:
        return await WorkerGroup(settings, count, child_args).run()
    except SupervisorError as exc:
        console.say(f"wsserver serve: {exc}", error=True)
        return 2
    finally:
        # The last lines get a while to reach a reader that is away, not for ever.
        await console.flush(FINAL_OUTPUT_WAIT_S)

"""What a capacity phase reads: Redis counters, a process's RSS over time, CPU in a window."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import psutil

from loadtest.common.processes import ChildProcess
from loadtest.common.redis_process import RedisProcess
from loadtest.common.stream_load import machine_busy_pct

_STATS = {
    "total_commands_processed": "commands",
    "total_net_input_bytes": "net_in_bytes",
    "total_net_output_bytes": "net_out_bytes",
    "used_memory": "used_memory_bytes",
    "total_connections_received": "connections",
}


def redis_counters(redis: RedisProcess) -> dict[str, float]:
    """Commands (every kind, and each one's calls), bytes in and out, memory, CPU.

    Scripts' inner calls count as commands (``INFO commandstats`` lists them), so
    ``commands`` is what the server executed, not round trips.
    """
    found: dict[str, float] = {"cpu_s": redis.cpu_seconds()}
    text = redis.command("INFO", "stats") + redis.command("INFO", "memory")
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in _STATS:
            found[_STATS[name]] = float(value)
    for line in redis.command("INFO", "commandstats").splitlines():
        # cmdstat_evalsha:calls=12,usec=...,...
        name, _, fields = line.partition(":")
        if name.startswith("cmdstat_"):
            calls = dict(part.split("=", 1) for part in fields.split(",") if "=" in part)
            found[f"cmd_{name[8:]}"] = float(calls.get("calls", 0))
    return found


def counter_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """``after - before`` for every counter either has (a command first seen counts from 0)."""
    keys = sorted(set(before) | set(after))
    return {k: round(after.get(k, 0.0) - before.get(k, 0.0), 4) for k in keys}


def commands_by_kind(delta: dict[str, float]) -> dict[str, float]:
    """The ``cmd_*`` counters of a delta that moved, without the probe's own ``info``."""
    return {k[4:]: v for k, v in delta.items() if k.startswith("cmd_") and v and k != "cmd_info"}


class RssSampler:
    """The peak RSS of a process, sampled every ``interval_s`` on a thread while ``with``."""

    def __init__(self, process: ChildProcess, interval_s: float = 0.25) -> None:
        self._process = psutil.Process(process.pid)
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.peak_bytes = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak_bytes = max(self.peak_bytes, int(self._process.memory_info().rss))
            except psutil.Error:
                return
            self._stop.wait(self._interval_s)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)


@dataclass(slots=True)
class CpuWindow:
    """CPU of named processes and of the whole machine between :meth:`open` and :meth:`close`."""

    readers: dict[str, Callable[[], float]]
    """Name -> CPU seconds so far (the worker, the client pool, redis-server, the router)."""
    at: float = 0.0
    seconds: dict[str, float] | None = None
    machine: Any = None

    def open(self) -> CpuWindow:
        """Read every counter now."""
        self.at = time.monotonic()
        self.seconds = {name: read() for name, read in self.readers.items()}
        self.machine = psutil.cpu_times()
        return self

    def close(self) -> dict[str, float]:
        """Each process's share of one core since :meth:`open`, the machine's busy share,
        and ``others_pct_of_core``: what processes not named here took (other users'
        jobs on a shared machine, the runner, the kernel's loopback work)."""
        assert self.seconds is not None, "window not opened"
        wall = time.monotonic() - self.at
        machine = psutil.cpu_times()
        shares = {
            f"{name}_pct_of_core": round(100 * (read() - self.seconds[name]) / wall, 2)
            for name, read in self.readers.items()
        }
        busy = machine_busy_pct(self.machine, machine) or 0.0
        ours = sum(shares.values())
        shares["machine_busy_pct"] = busy
        shares["others_pct_of_core"] = round(max(0.0, busy * (os.cpu_count() or 1) - ours), 1)
        shares["wall_s"] = round(wall, 3)
        return shares


def cpu_window(readers: dict[str, Callable[[], float]], duration_s: float) -> dict[str, float]:
    """A :class:`CpuWindow` held open for ``duration_s``."""
    window = CpuWindow(readers).open()
    time.sleep(duration_s)
    return window.close()


def pool_reader(pids: Sequence[int]) -> Callable[[], float]:
    """CPU seconds of a fixed set of processes (gone ones count 0)."""

    def read() -> float:
        total = 0.0
        for pid in pids:
            try:
                times = psutil.Process(pid).cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
        return total

    return read

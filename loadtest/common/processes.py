"""What the runner's subprocesses share: stopped for sure on leaving ``with``, by pid."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from types import TracebackType

import psutil


def free_port() -> int:
    """A free loopback port, for a subprocess to listen on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cpu_seconds(process: psutil.Process) -> float:
    """User plus system CPU time of ``process`` so far (all its threads, ended ones too).

    On Linux to the nanosecond, from the process's own CPU clock: the clock ticks that
    ``cpu_times()`` counts are 10 ms, which a light process's short phase (a router
    relaying a few hundred frames) can fall within and read as no CPU at all.
    """
    if sys.platform == "linux":
        # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED): the kernel's clock id for a whole
        # process's scheduled time; readable for any process (EINVAL once it is gone).
        try:
            return time.clock_gettime(((~process.pid) << 3) | 2)
        except OSError:
            pass  # gone: cpu_times() raises what callers expect (psutil.NoSuchProcess)
    times = process.cpu_times()
    return float(times.user + times.system)


class StopsOnExit(ABC):
    """Leaving the ``with`` block calls :meth:`stop`, on an error or Ctrl-C too."""

    @abstractmethod
    def stop(self) -> None:
        """End the process(es) for sure; safe to call twice."""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ChildProcess(StopsOnExit):
    """One ``Popen`` child: its pid, its CPU time, and a stop by pid.

    Subclasses start it and set ``_popen`` and ``_psutil``.
    """

    signal_group = False
    """Signal the process group the child leads (it was started with ``start_new_session``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._popen: subprocess.Popen[bytes] | None = None
        self._psutil: psutil.Process | None = None

    @property
    def pid(self) -> int:
        """Process id of the running child."""
        assert self._popen is not None, f"{self.name} not started"
        return self._popen.pid

    def cpu_seconds(self) -> float:
        """User plus system CPU time used so far."""
        assert self._psutil is not None, f"{self.name} not started"
        return cpu_seconds(self._psutil)

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``, by pid; safe to call twice."""
        popen = self._popen
        if popen is None or popen.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                if self.signal_group:
                    os.killpg(popen.pid, sig)
                else:
                    popen.send_signal(sig)
            except ProcessLookupError:
                return
            try:
                popen.wait(timeout_s)
                return
            except subprocess.TimeoutExpired:
                continue

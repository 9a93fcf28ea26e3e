"""A ``wsserver serve --workers N`` group as a real subprocess, and its workers."""

from __future__ import annotations

import json
import os
import re
import socket
import urllib.request
from pathlib import Path
from typing import Any

from tests.processes import WorkerProcess

READY = re.compile(r"worker (\S+) ready \(pid (\d+)\)")


def alive(pid: int) -> bool:
    """Whether process ``pid`` is there (not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def children_of(pid: int) -> set[int]:
    """The live (not zombie) child processes of ``pid``."""
    listed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    alive = set()
    for child in map(int, listed):
        try:
            state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(child)
    return alive


def free_port_pair() -> int:
    """A free port whose next one is free too (the admin ports of two workers)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port: int = probe.getsockname()[1]
        if port >= 65535:
            continue
        with socket.socket() as first, socket.socket() as second:
            try:
                first.bind(("127.0.0.1", port))
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two free ports in a row")


class WorkerGroupProcess(WorkerProcess):
    """The group's parent process; ``--admin-port A`` gives worker ``i`` port ``A + i``."""

    def __init__(self, *flags: str, workers: int = 2, name: str = "grp") -> None:
        self.admin_port = free_port_pair()
        super().__init__(
            "--workers", str(workers), "--admin-port", str(self.admin_port), *flags, name=name
        )

    def ready_workers(self) -> dict[str, int]:
        """Every worker the group started and saw ready, by id: its pid."""
        return {
            match[1]: int(match[2]) for line in list(self.lines) if (match := READY.search(line))
        }

    def worker_stats(self, slot: int) -> dict[str, Any]:
        """``/stats`` of worker ``slot`` (whichever generation holds it), on its admin port."""
        url = f"http://127.0.0.1:{self.admin_port + slot}/stats"
        with urllib.request.urlopen(url, timeout=5) as response:
            body: dict[str, Any] = json.load(response)
            return body

"""Workers for the metrics tests: one per module, started once (real subprocesses)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.processes import WorkerProcess
from tests.redis_server import free_port
from wsserver.frontdoor.api_keys import key_line, new_api_key


@dataclass
class MeteredWorker:
    """A worker with API keys (one of them admin) and an admin listener."""

    process: WorkerProcess
    user_key: str
    admin_key: str
    admin_port: int

    @property
    def base(self) -> str:
        return self.process.http

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def admin_base(self) -> str:
        return f"http://127.0.0.1:{self.admin_port}"


def keys_file(folder: Path) -> tuple[str, str, str]:
    """(file, a user's key, an admin's key)."""
    user, admin = new_api_key(), new_api_key()
    path = folder / "keys"
    path.write_text(key_line("alice", user) + "\n" + key_line("ops", admin, admin=True) + "\n")
    return str(path), user, admin


def metered_worker(folder: Path, *flags: str, name: str) -> Iterator[MeteredWorker]:
    """Start a keyed worker with ``flags``; stop it afterwards."""
    path, user, admin = keys_file(folder)
    admin_port = free_port()
    process = WorkerProcess(
        "--api-keys-file", path, "--admin-port", str(admin_port), *flags, name=name
    ).start()
    try:
        yield MeteredWorker(process, user, admin, admin_port)
    finally:
        process.stop()


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeteredWorker]:
    """A worker that answers fast, with server VAD available (energy detector)."""
    yield from metered_worker(
        tmp_path_factory.mktemp("keys"),
        "--decode-rate",
        "400",
        "--grace-period",
        "30",
        name="metered",
    )

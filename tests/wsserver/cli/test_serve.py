"""``wsserver serve``: settings from flags and the environment, checked before it starts."""

from __future__ import annotations

import signal
import socket
import subprocess
import time

from tests.processes import WSSERVER, WorkerProcess, run_serve
from tests.processes import cli_env as _env


def test_serve_rejects_invalid_settings() -> None:
    result = subprocess.run(
        [*WSSERVER, "serve", "--decode-rate", "-3"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "decode_rate" in result.stderr


def test_serve_names_an_unknown_store_without_a_traceback() -> None:
    result = subprocess.run(
        [*WSSERVER, "serve", "--port", "0", "--store", "foo"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "--store: unknown store 'foo'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_taken_port_or_admin_port_is_named_without_a_traceback() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for flags in (("--port", port), ("--port", "0", "--admin-port", port)):
            result = run_serve("--workers", "1", *flags)
            assert result.returncode == 2, result.stdout + result.stderr
            assert "wsserver serve: cannot listen: " in result.stderr
            assert f"('127.0.0.1', {port})" in result.stderr
            assert "Traceback" not in result.stderr
            assert "listening on" not in result.stdout


def test_one_worker_process_ignores_sighup_and_says_why() -> None:
    worker = WorkerProcess(name="hup").start()
    try:
        worker.signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while not any("SIGHUP ignored" in line for line in worker.lines):
            assert time.monotonic() < deadline, "".join(worker.lines)
            time.sleep(0.05)
        assert worker.get("/healthz")[0] == 200, "still serving"
    finally:
        worker.stop()

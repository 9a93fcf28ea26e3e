"""A collector that accepts the connection and never answers: the worker still stops soon.

The exporter's own timeout (here set to a minute through the standard variable) would
hold the last batch's export, and so the worker's exit, that long; the tracer's shutdown
is bounded (docs/OBSERVABILITY.md), so a SIGTERM still ends the process within the
pod's grace period.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
from collections.abc import Iterator

import pytest

from tests.processes import WSSERVER, cli_env, watch_output
from tests.wsserver.wire import RawClient


@pytest.fixture
def hanging_collector() -> Iterator[int]:
    """A listening socket that never accepts nor answers (the kernel completes the connect)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture
def traced_worker(hanging_collector: int) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """A worker exporting to the hanging collector, the exporter's timeout a minute."""
    env = cli_env(OTEL_EXPORTER_OTLP_TRACES_TIMEOUT="60")
    endpoint = f"http://127.0.0.1:{hanging_collector}"
    process = subprocess.Popen(
        [*WSSERVER, "serve", "--port", "0", "--store", "memory", "--otlp-endpoint", endpoint,
         "--answer-tokens", "3", "--decode-rate", "400", "--drain-timeout", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    lines: list[str] = []
    found, url = watch_output(process, r"listening on (ws://\S+)", lines.append)
    assert found.wait(20), "".join(lines)
    lines.insert(0, url[0])
    yield process, lines
    if process.poll() is None:
        process.kill()
        process.wait(10)


async def test_a_hanging_collector_does_not_hold_the_workers_exit(
    traced_worker: tuple[subprocess.Popen[str], list[str]],
) -> None:
    process, lines = traced_worker
    client = await RawClient.connect(lines[0])
    await client.start()
    await client.send({"type": "response.create", "input": "a span to export"})
    await client.until("response.done")
    await client.close()
    await asyncio.sleep(1.5)  # the batch's export has begun and hangs
    process.send_signal(signal.SIGTERM)
    # Far under the exporter's minute: the shutdown bound, not the export, decides.
    code = await asyncio.to_thread(process.wait, 30)
    assert code == 0, "".join(lines)
    assert any("stopped" in line for line in lines)

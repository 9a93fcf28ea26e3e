"""Hostile targets: the load test ends within its bound, with a report and a non-zero exit.

One WebSocket server on loopback (in a thread) answers each path its own way: a frame
that claims a gigabyte, bytes that are no frame, silence, a close at once.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

from loadtest.command.main import main

GIB_FRAME = b"\x81\x7f" + (1 << 30).to_bytes(8, "big") + b"{" * 4096
"""A text frame header claiming 1 GiB, then the first few KB of it (the rest never comes)."""


async def _hostile(ws: ServerConnection) -> None:
    path = ws.request.path if ws.request is not None else "/"
    transport = ws.transport
    if path == "/huge":
        transport.write(GIB_FRAME)
    elif path == "/garbage":
        transport.write(b"\x8f\x05hello" + b"\xff" * 64)  # reserved opcode 0xF
    elif path == "/close":
        await ws.close(1011, "go away")
        return
    await ws.wait_closed()  # /silent, and the others after their bytes: the client ends it


@pytest.fixture(scope="module")
def hostile_port() -> Iterator[int]:
    loop = asyncio.new_event_loop()
    started = threading.Event()
    port: list[int] = []
    stop: list[asyncio.Future[None]] = []

    async def run() -> None:
        async with serve(_hostile, "127.0.0.1", 0, max_size=None) as server:
            port.append(server.sockets[0].getsockname()[1])
            stop.append(loop.create_future())
            started.set()
            await stop[0]

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
    thread.start()
    assert started.wait(10)
    yield port[0]
    loop.call_soon_threadsafe(stop[0].set_result, None)
    thread.join(10)


@pytest.mark.parametrize("path", ["huge", "garbage", "silent", "close"])
def test_a_hostile_target_ends_the_run_with_a_report_and_a_failure(
    hostile_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    report = tmp_path / f"{path}.json"
    url = f"ws://127.0.0.1:{hostile_port}/{path}"
    bound = ["--duration", "1", "--drain", "1", "--sessions", "2", "--ramp", "0"]
    code = main(["chat", "--url", url, *bound, "--report", str(report), "--no-baseline",
                 "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    data = json.loads(report.read_text())
    target = data["results"]["target"]
    assert target["counters"].get("sessions_opened", 0) == 0
    if path == "huge":
        # Refused at its header (1009, message too big), not read for the whole bound.
        assert target["cut"] is False, target
        assert target["errors"] == {"closed by the load test: 1009": 2}, target

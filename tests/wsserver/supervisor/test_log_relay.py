"""A group's worker logs reach its stderr in whole lines, in the format chosen for it;
its output says once what every worker would say alike."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.processes import WSSERVER, cli_env, watch_output
from tests.redis_server import RedisServer
from tests.wsserver.supervisor.group_processes import free_port_pair
from wsserver.supervisor.log_relay import relay_lines

LINES = 60
PAD = 20_000
"""Each line is ~5 times PIPE_BUF: one write of it into a shared pipe is not atomic."""

WRITER = f"""
import json, os, sys
name = sys.argv[1]
for n in range({LINES}):
    line = json.dumps({{"writer": name, "n": n, "pad": name[0] * {PAD}}}) + "\\n"
    os.write(1, line.encode())
"""


async def _relay_two_writers(sink_path: Path) -> None:
    with sink_path.open("w") as sink:
        writers = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-c", WRITER, name, stdout=asyncio.subprocess.PIPE
            )
            for name in ("alpha", "omega")
        ]
        relays = []
        for writer in writers:
            assert writer.stdout is not None
            relays.append(relay_lines(writer.stdout, sink))
        await asyncio.gather(*relays)
        for writer in writers:
            assert await writer.wait() == 0


def test_two_writers_of_long_lines_never_splice_a_line(tmp_path: Path) -> None:
    sink_path = tmp_path / "stderr"
    asyncio.run(_relay_two_writers(sink_path))
    lines = sink_path.read_text().splitlines()
    assert len(lines) == 2 * LINES
    seen: dict[str, list[int]] = {"alpha": [], "omega": []}
    for line in lines:
        record = json.loads(line)  # a spliced line is not JSON
        assert record["pad"] == record["writer"][0] * PAD
        seen[record["writer"]].append(record["n"])
    assert seen == {"alpha": list(range(LINES)), "omega": list(range(LINES))}


async def _relay_bytes(data: bytes, sink_path: Path) -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    with sink_path.open("w") as sink:
        await relay_lines(reader, sink)


def test_an_unfinished_last_line_and_invalid_utf8_are_still_passed_on(tmp_path: Path) -> None:
    sink_path = tmp_path / "stderr"
    asyncio.run(_relay_bytes(b'{"a":1}\nhalf a line \xff\xfe without an end', sink_path))
    # The unfinished last line is ended: a line another worker writes next starts anew.
    assert sink_path.read_text() == '{"a":1}\nhalf a line \ufffd\ufffd without an end\n'


HUMAN_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} INFO wsserver\.worker\.server: draining: ")


def test_on_a_terminal_the_workers_log_in_the_human_format(redis_server: RedisServer) -> None:
    """``--log-format auto`` picks the format for the group's terminal, not for the pipe
    each worker's logs now go through."""
    leader, follower = pty.openpty()
    command = [*WSSERVER, "serve", "--port", "0", "--workers", "2", "--store", redis_server.url]
    command += [
        "--admin-port",
        str(free_port_pair()),
        "--log-format",
        "auto",
        "--drain-timeout",
        "0.5",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=follower, env=cli_env(), text=True
    )
    os.close(follower)
    received: list[str] = []

    def read_terminal() -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # every writer of the terminal is gone
                return
            if not chunk:
                return
            pending += chunk
            *whole, pending = pending.split(b"\n")
            received.extend(line.decode(errors="replace").rstrip("\r") for line in whole)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        printed: list[str] = []
        ready, _ = watch_output(process, r"wsserver listening on ", printed.append)
        assert ready.wait(30), "the group did not start"
        # Each worker logs its drain on SIGTERM, to the group's stderr: the terminal.
        process.terminate()
        assert process.wait(30) == 0
        reader.join(10)
        for _ in range(100):  # the stdout thread reads to the end ("stopped" is last)
            if any(line.startswith("stopped") for line in printed):
                break
            time.sleep(0.05)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    # Both workers serve the demo page on the one port: the group prints it once, last.
    pages = [i for i, line in enumerate(printed) if line.startswith("demo page: ")]
    banner = next(i for i, line in enumerate(printed) if line.startswith("wsserver listening"))
    assert pages == [banner + 1], printed
    drains = [line for line in received if "draining: up to" in line]
    assert len(drains) == 2 and all(HUMAN_LINE.match(line) for line in drains), received
    assert not any(line.startswith('{"ts"') for line in received), received

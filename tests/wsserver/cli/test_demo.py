"""``wsserver serve --demo``: every feature shown against the running server."""

from __future__ import annotations

import subprocess
import time

from tests.processes import WSSERVER
from tests.processes import cli_env as _env


def test_serve_demo_shows_every_feature_and_keeps_serving() -> None:
    process = subprocess.Popen(
        [*WSSERVER, "serve", "--port", "0", "--demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            lines.append(line)
            if "--- demo done ---" in line:
                break
        output = "".join(lines)
        assert "--- demo done ---" in output, output
        assert "status interrupted" in output
        assert "reconnects 1" in output
        assert "[tool call get_weather {'city': 'Oslo'}]" in output
        assert "resp_1: interrupted (speech)" in output
        assert "resp_2: completed" in output
        assert process.poll() is None, "the server stopped after the demo"
    finally:
        process.terminate()
        process.wait(10)

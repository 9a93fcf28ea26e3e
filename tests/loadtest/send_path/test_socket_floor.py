"""``python -m loadtest.send_path.socket_floor`` at a tiny load: its own reader process
drains N loopback connections while every step writes one frame to each of them."""

from __future__ import annotations

import json
import subprocess
import sys


def _floor(*flags: str) -> dict[str, float]:
    command = [sys.executable, "-m", "loadtest.send_path.socket_floor", *flags]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    assert done.stderr == ""
    result: dict[str, float] = json.loads(done.stdout)
    return result


def test_every_step_writes_one_frame_to_every_connection() -> None:
    result = _floor("--sessions", "5", "--decode-rate", "20", "--seconds", "1", "--warmup", "0.2")
    assert result["sessions"] == 5
    # Paced by the decode clock: 20 steps in the second, each a frame to all five (the
    # reader keeps up, so none is skipped); a busy machine may lose a step or two.
    assert 5 * 15 <= result["frames"] <= 5 * 21
    assert result["frames"] % 5 == 0
    assert result["cpu_us_per_frame"] > 0
    parts = result["user_us_per_frame"] + result["system_us_per_frame"]
    assert abs(parts - result["cpu_us_per_frame"]) < 0.05


def test_a_connection_past_the_write_limit_is_skipped_and_not_counted() -> None:
    # A negative limit puts every connection past it: nothing is written, and so nothing
    # is counted (frames are those handed to the kernel, not those a step asked for).
    skipped = _floor(
        "--sessions", "3", "--decode-rate", "50", "--seconds", "0.5", "--write-limit", "-1"
    )
    assert skipped["frames"] == 0
    assert skipped["cpu_us_per_frame"] is None

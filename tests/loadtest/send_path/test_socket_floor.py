"""``python -m loadtest.send_path.socket_floor`` at a tiny load: its own reader process
drains N loopback connections while every step writes one frame to each of them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path


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


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def test_the_reader_ends_with_the_writer_even_a_killed_one() -> None:
    command = [sys.executable, "-m", "loadtest.send_path.socket_floor", "--sessions", "3"]
    writer = subprocess.Popen([*command, "--seconds", "60"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (readers := _children(writer.pid)):
            assert time.monotonic() < deadline, "no reader process"
            time.sleep(0.1)
        time.sleep(1)  # connected and reading
        (reader,) = readers
        writer.kill()
        writer.wait()
        # Its connections closed with the writer: the reader sees it and ends.
        deadline = time.monotonic() + 15
        while Path(f"/proc/{reader}").exists() and "Z" not in _state(reader):
            assert time.monotonic() < deadline, "the reader outlived its writer"
            time.sleep(0.1)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def test_nonsense_arguments_are_refused() -> None:
    command = [sys.executable, "-m", "loadtest.send_path.socket_floor"]
    done = subprocess.run([*command, "--seconds", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "must be" in done.stderr

"""The group's output is written off its loop: a reader that stops reading stalls no
supervision, keeps a bounded backlog, and holds the other stream up not at all."""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
import threading
from collections.abc import Iterator

import pytest

from wsserver.supervisor import console


class StalledSink(io.StringIO):
    """A stream whose reader is away until ``resume`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.resume = threading.Event()

    def write(self, text: str, /) -> int:
        self.resume.wait()
        return super().write(text)


@pytest.fixture
def stalled_stdout() -> Iterator[StalledSink]:
    """``sys.stdout`` for the test's body (output capture sets its own before the body)."""
    sink = StalledSink()
    try:
        yield sink
    finally:
        sink.resume.set()


def _stall(monkeypatch: pytest.MonkeyPatch, sink: StalledSink) -> None:
    monkeypatch.setattr(sys, "stdout", sink)


def test_lines_said_to_a_stalled_reader_wait_without_stopping_the_loop(
    stalled_stdout: StalledSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stall(monkeypatch, stalled_stdout)

    async def scenario() -> None:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticking = asyncio.create_task(tick())
        for n in range(100):
            console.say(f"line {n}")
        await asyncio.sleep(0.3)
        assert ticks >= 5  # the loop ran on while nothing could be written
        assert not await console.flush(0.2)  # the reader is still away
        stalled_stdout.resume.set()
        assert await console.flush(5)
        ticking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticking

    asyncio.run(scenario())
    assert stalled_stdout.getvalue().splitlines() == [f"line {n}" for n in range(100)]


def test_past_the_bound_lines_are_dropped_and_counted(
    stalled_stdout: StalledSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stall(monkeypatch, stalled_stdout)
    line = "x" * 999  # 1,000 bytes with its newline
    kept = console.MAX_PENDING_BYTES // 1000

    async def scenario() -> None:
        for _ in range(kept + 50):
            console.say(line)
        stalled_stdout.resume.set()
        assert await console.flush(5)
        console.say("after")
        assert await console.flush(5)

    asyncio.run(scenario())
    lines = stalled_stdout.getvalue().splitlines()
    assert lines[:kept] == [line] * kept
    assert lines[kept:] == ["(50 lines of the group's output dropped: nobody read them)", "after"]


def test_a_stalled_stdout_holds_up_no_line_on_stderr(
    stalled_stdout: StalledSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stall(monkeypatch, stalled_stdout)
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)

    async def scenario() -> None:
        console.say("to stdout")
        await asyncio.wait_for(console.write(sys.stderr, "a log line\n"), 5)
        console.say("an error", error=True)
        for _ in range(100):
            if "an error" in stderr.getvalue():
                break
            await asyncio.sleep(0.01)

    asyncio.run(scenario())
    assert stderr.getvalue() == "a log line\nan error\n"
    assert stalled_stdout.getvalue() == ""


def test_a_broken_stream_loses_its_text_and_nothing_else() -> None:
    class Broken(io.StringIO):
        def write(self, text: str, /) -> int:
            raise BrokenPipeError

    async def scenario() -> None:
        broken, fine = Broken(), io.StringIO()
        await asyncio.wait_for(console.write(broken, "lost\n"), 5)
        await asyncio.wait_for(console.write(fine, "kept\n"), 5)
        assert fine.getvalue() == "kept\n"

    asyncio.run(scenario())

"""A worker's log stream, passed on to the group's stderr in whole lines.

Workers sharing the parent's stderr directly could interleave: a pipe write is
atomic only up to ``PIPE_BUF`` (4 KiB), and a JSON log line with a long message
or traceback is longer, so two workers logging at once could splice their lines
into one unparseable line. Each worker's stderr is a pipe of its own instead; the
parent reads what is there and writes it on up to the last newline in one write,
keeping the unfinished tail for the next read. The parent is the only writer of
its stderr, one write at a time, so no line is ever split by another's.

A write that fails (the reader of the group's stderr went away: EPIPE) loses those
lines and nothing else: the relay goes on reading, so the worker never blocks on a
full pipe, and it never raises into the group's supervision of that worker.

The writes happen in the group's output thread (:mod:`wsserver.supervisor.console`),
in the order they were asked for: a reader of the group's stderr that stalls (a log
shipper that stopped reading) then blocks that thread and, through their full pipes,
the workers that log, as it did when they wrote it themselves, but never the group's
loop, which goes on handling signals and restarting workers that die.
"""

from __future__ import annotations

import asyncio

from wsserver.supervisor import console
from wsserver.supervisor.console import TextSink

READ_BYTES = 1 << 16
"""Bytes read at a time."""

MAX_PARTIAL_LINE = 1 << 20
"""An unfinished line is written on as it is past this many bytes (the memory bound)."""


async def relay_lines(source: asyncio.StreamReader, sink: TextSink) -> None:
    """Copy ``source`` to ``sink`` until its end, whole lines per write."""
    pending = b""
    while True:
        data = await source.read(READ_BYTES)
        if not data:
            break
        pending += data
        end = pending.rfind(b"\n") + 1
        if end == 0 and len(pending) <= MAX_PARTIAL_LINE:
            continue
        if end == 0:
            end = len(pending)
        await console.write(sink, _text(pending[:end]))
        pending = pending[end:]
    if pending:
        # The worker ended mid-line (killed, or it never wrote the newline): the line
        # is ended here, so the next line another worker writes starts on its own.
        await console.write(sink, _text(pending + b"\n"))


def _text(data: bytes) -> str:
    # A worker's logs are UTF-8 (JSON lines are ASCII); anything else is shown, not fatal.
    return data.decode(errors="replace")

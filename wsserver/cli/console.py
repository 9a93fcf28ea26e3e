"""A server's output outlives whoever reads it.

``wsserver serve | head -3`` closes the pipe once ``head`` has its lines, and the next
line the server prints would raise ``BrokenPipeError`` and end it (a group's supervisor
at its banner, a worker at its first ``stopped`` line); a closed terminal (EIO) or a
full disk (ENOSPC) the same. What a long-running command prints is for a person
watching: once it cannot be written, it goes nowhere and the server goes on serving.
The first write that fails so points the file descriptor at ``/dev/null``, so what is
still buffered, later lines and the interpreter's last flush all succeed. (A full disk
that frees up again gets no more lines: they are not worth a server's stop.)
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import TextIO


class ReaderSafeStream(io.TextIOBase):
    """A text stream that writes to ``stream`` until a write fails, then nowhere."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str, /) -> int:
        """Write ``text`` (its length, written or not once the stream is given up)."""
        try:
            return self._stream.write(text)
        except BlockingIOError:
            # A non-blocking descriptor that is full for now: this text is dropped, the
            # stream is not given up.
            return len(text)
        except OSError:
            self._lost()
            return len(text)

    def flush(self) -> None:
        """Flush, unless the stream cannot be written (then what was buffered is dropped)."""
        try:
            self._stream.flush()
        except BlockingIOError:
            return
        except OSError:
            self._lost()

    def _lost(self) -> None:
        self.reader_gone = True
        # Later writes (and the wrapped stream's buffered text) then succeed on their own.
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def fileno(self) -> int:
        """The wrapped stream's descriptor."""
        return self._stream.fileno()

    def isatty(self) -> bool:
        """Whether the wrapped stream is a terminal (the log format's ``auto`` asks)."""
        return self._stream.isatty()

    def writable(self) -> bool:
        """Always: writing is what this stream is for."""
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """The wrapped stream's encoding."""
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        """The wrapped stream's error handler."""
        return self._stream.errors


def outlive_readers() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` survive their readers (idempotent)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ReaderSafeStream):
            setattr(sys, name, ReaderSafeStream(stream))

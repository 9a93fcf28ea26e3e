"""Server-sent events over a byte stream: the ``data`` of each event, bounded.

Only what chat-completion streams use: ``data:`` lines joined by newlines into one
event, a blank line ending it, comments (``:`` lines, keep-alive pings) and other
fields ignored. A line or an event longer than the bound raises instead of growing
(an upstream that never ends a line costs that bound, not the process's memory); bytes
that are not UTF-8 raise too.
"""

from __future__ import annotations

from wsserver.engine.openai.errors import UpstreamProtocolError


class SSEParser:
    """Feed bytes as they arrive; get back the events they completed."""

    __slots__ = ("_data", "_data_bytes", "_limit", "_pending")

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        self._limit = max_line_bytes
        self._pending = bytearray()
        self._data: list[str] = []
        self._data_bytes = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The ``data`` of every event that ``chunk`` completed, in order."""
        self._pending += chunk
        events: list[str] = []
        start = 0
        pending = self._pending
        while True:
            end = pending.find(b"\n", start)
            if end < 0:
                break
            if end - start > self._limit:
                raise UpstreamProtocolError(f"upstream sent a line longer than {self._limit} bytes")
            line = bytes(pending[start:end])
            start = end + 1
            self._line(line, events)
        if start:
            del pending[:start]
        if len(pending) > self._limit:
            raise UpstreamProtocolError(f"upstream sent a line longer than {self._limit} bytes")
        return events

    def close(self) -> list[str]:
        """The stream ended: an event left without its blank line still counts."""
        events: list[str] = []
        if self._pending:
            line = bytes(self._pending)
            self._pending.clear()
            self._line(line, events)
        if self._data:
            events.append("\n".join(self._data))
            self._data = []
        return events

    def _line(self, raw: bytes, events: list[str]) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw:
            if self._data:
                events.append("\n".join(self._data))
                self._data = []
                self._data_bytes = 0
            return
        if not raw.startswith(b"data:"):
            return  # a comment (keep-alive), ``event:``, ``id:``, ``retry:``
        value = raw[6:] if raw.startswith(b"data: ") else raw[5:]
        self._data_bytes += len(value)
        if self._data_bytes > self._limit:
            raise UpstreamProtocolError(f"upstream sent an event longer than {self._limit} bytes")
        try:
            self._data.append(value.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise UpstreamProtocolError("upstream sent bytes that are not utf-8") from exc

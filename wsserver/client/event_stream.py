"""The events a session hands its application, once each and in order, until it ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from protocol.client_session import TRUNCATED
from wsserver.client.errors import SessionClosed
from wsserver.client.results import ResponseResult

_END = object()
"""Queued after the last event: the session ended."""


class EventStream:
    """A queue of session events that, once ended, raises for every reader."""

    def __init__(self, closed_error: Callable[[], SessionClosed]) -> None:
        """``closed_error``: the error a reader gets after the end, made when it reads."""
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._closed_error = closed_error

    def put(self, event: dict[str, Any]) -> None:
        """Hand the application one more event."""
        self._queue.put_nowait(event)

    def end(self) -> None:
        """No more events: readers past the last one get the closed error."""
        self._queue.put_nowait(_END)

    async def next_event(self, timeout: float | None = None) -> dict[str, Any]:
        """The next event; raises :class:`SessionClosed` when the session ended."""
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancel that
        # comes as the event does, and the caller's task would read on.
        async with asyncio.timeout(timeout):
            item = await self._queue.get()
        if item is _END:
            # Left for the next reader: every read after the end raises.
            self._queue.put_nowait(_END)
            raise self._closed_error()
        event: dict[str, Any] = item
        return event

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Every event once, in order, until the session ends."""
        while True:
            try:
                yield await self.next_event()
            except SessionClosed:
                return

    async def collect_response(self, timeout: float | None = None) -> ResponseResult:
        """Read events until the current response ends (done or truncated)."""
        result = ResponseResult("", "", "")
        parts: list[str] = []
        audio: list[bytes] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            event = await self.next_event(remaining)
            kind = event.get("type")
            if kind == "response.created":
                result.response_id = event["response_id"]
            elif kind == "response.text.delta":
                parts.append(event["delta"])
            elif kind == "response.audio.delta":
                audio.append(event["audio"])
                continue
            elif kind == "response.tool_call":
                result.tool_calls.append(event)
            elif kind == "response.output_json.done":
                result.output_json = event["value"]
            elif kind == "input_audio.transcript" and event.get("final"):
                result.transcript = event.get("text")
            elif kind in ("response.done", TRUNCATED):
                result.events.append(event)
                result.response_id = event.get("response_id", result.response_id)
                result.status = event.get("status", "truncated")
                result.reason = event.get("reason")
                result.usage = event.get("usage", {})
                result.text = "".join(parts)
                result.audio = b"".join(audio)
                return result
            result.events.append(event)

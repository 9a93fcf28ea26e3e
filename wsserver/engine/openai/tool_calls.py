"""Tool calls assembled from streamed ``delta.tool_calls`` entries, as servers send them.

Entries are matched by ``index``; the ``id`` and the function's ``name`` come in a
call's first entry, its ``arguments`` in pieces after (llama.cpp, OpenAI). vLLM may
send the name without an ``arguments`` key and the first arguments as a second entry
for the same index in one chunk, and its finish chunk can carry the last arguments.
Ollama sends a whole call in one entry and some versions leave ``index`` out: such an
entry is a call of its own (or continues the latest call when it names none).

Out come :class:`ToolCallFragment`\\ s in the shape the session core takes: pieces of
a call's arguments (the first once its name is known), then one ``complete`` fragment
per call, when a later call starts or the turn ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from protocol.generation import ToolCallFragment
from protocol.unicode_text import valid_text
from wsserver.engine.openai.errors import UpstreamProtocolError


@dataclass(slots=True)
class _Call:
    key: int
    position: int = 0
    """Where it is in the turn's calls (names a call the upstream gave no id)."""
    call_id: str = ""
    name: str = ""
    held: str = ""
    """Arguments received before the name (emitted once it is known)."""
    announced: bool = False
    complete: bool = False
    size: int = 0


MAX_CALLS_PER_TURN = 128
"""Calls one turn may make; past it the answer fails (each call is a client round trip,
and a turn of thousands is an upstream gone wrong)."""


MAX_ID_CHARS = 128
"""An upstream's call id longer than this, or with characters that are not printable, is
replaced by one of ours (ids reach the client's events and its results' keys)."""


def _usable_id(call_id: str) -> bool:
    return 0 < len(call_id) <= MAX_ID_CHARS and call_id.isprintable() and call_id.isascii()


class ToolCallAssembler:
    """One generation's calls, in the order they started."""

    def __init__(self, id_prefix: str, max_arguments_bytes: int = 1 << 20) -> None:
        self._id_prefix = id_prefix
        self._limit = max_arguments_bytes
        self._calls: dict[int, _Call] = {}
        self._order: list[_Call] = []
        self._unindexed = -1
        self._ids: set[str] = set()

    @property
    def any(self) -> bool:
        """Whether the turn made a call (what makes it a tool-calling turn)."""
        return bool(self._order)

    def feed(self, entries: Any) -> list[ToolCallFragment]:
        """The fragments that one chunk's ``delta.tool_calls`` entries make."""
        if not isinstance(entries, list):
            raise UpstreamProtocolError("upstream sent tool_calls that are not a list")
        out: list[ToolCallFragment] = []
        for entry in entries:
            if not isinstance(entry, dict):
                raise UpstreamProtocolError("upstream sent a tool call that is not an object")
            self._entry(entry, out)
        return out

    def finish(self) -> list[ToolCallFragment]:
        """The ``complete`` fragments of every call still open (the turn ended)."""
        out: list[ToolCallFragment] = []
        for call in self._order:
            self._complete(call, out)
        return out

    def _entry(self, entry: dict[str, Any], out: list[ToolCallFragment]) -> None:
        function = entry.get("function") or {}
        if not isinstance(function, dict):
            raise UpstreamProtocolError("upstream sent a tool call function that is not an object")
        name = function.get("name")
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            # Some servers send the arguments as an object rather than JSON text.
            arguments = json.dumps(arguments)
        if isinstance(arguments, str):
            arguments = valid_text(arguments)
        call = self._call_for(entry.get("index"), entry.get("id"), name, out)
        if call.complete:
            raise UpstreamProtocolError("upstream sent more of a tool call after it ended")
        call_id = entry.get("id")
        if isinstance(call_id, str) and _usable_id(call_id) and not call.call_id:
            self._own_id(call, call_id)
        if isinstance(name, str) and name and not call.name:
            call.name = valid_text(name)
        if arguments:
            call.size += len(arguments)
            if call.size > self._limit:
                raise UpstreamProtocolError(
                    f"upstream sent tool call arguments longer than {self._limit} bytes"
                )
            call.held += arguments
        self._emit(call, out)

    def _call_for(self, index: Any, call_id: Any, name: Any, out: list[ToolCallFragment]) -> _Call:
        if isinstance(index, bool) or not isinstance(index, int | None):
            raise UpstreamProtocolError("upstream sent a tool call index that is not an integer")
        if index is None:
            latest = self._order[-1] if self._order else None
            if latest is not None and not call_id and not name and not latest.complete:
                return latest
            # Keys below zero never meet a server's own indexes.
            index = self._unindexed
            self._unindexed -= 1
        call = self._calls.get(index)
        if call is None:
            if len(self._order) >= MAX_CALLS_PER_TURN:
                raise UpstreamProtocolError(
                    f"upstream sent more than {MAX_CALLS_PER_TURN} tool calls in one turn"
                )
            # A later call started: the earlier ones are whole (servers write calls one
            # after the other), so the session core may validate them now.
            if self._order:
                self._complete(self._order[-1], out)  # only the latest can be open
            call = _Call(index, position=len(self._order))
            self._calls[index] = call
            self._order.append(call)
        return call

    def _emit(self, call: _Call, out: list[ToolCallFragment]) -> None:
        if not call.name:
            return  # nothing can be said of a call before its name
        if not call.call_id:
            self._own_id(call, f"{self._id_prefix}_{call.position}")
        if call.held or not call.announced:
            out.append(ToolCallFragment(call.call_id, call.name, call.held))
            call.held = ""
            call.announced = True

    def _own_id(self, call: _Call, call_id: str) -> None:
        # Results are keyed by call id: a second call with the same one could never be
        # answered (and the first's result would be taken for it).
        if call_id in self._ids:
            raise UpstreamProtocolError("upstream sent two tool calls with one id")
        self._ids.add(call_id)
        call.call_id = call_id

    def _complete(self, call: _Call, out: list[ToolCallFragment]) -> None:
        if call.complete:
            return
        if not call.name:
            raise UpstreamProtocolError("upstream sent a tool call without a name")
        self._emit(call, out)
        call.complete = True
        out.append(ToolCallFragment(call.call_id, call.name, complete=True))

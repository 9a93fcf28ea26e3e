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
from wsserver.engine.openai.errors import UpstreamProtocolError


@dataclass(slots=True)
class _Call:
    key: int
    call_id: str = ""
    name: str = ""
    held: str = ""
    """Arguments received before the name (emitted once it is known)."""
    announced: bool = False
    complete: bool = False
    size: int = 0


class ToolCallAssembler:
    """One generation's calls, in the order they started."""

    def __init__(self, id_prefix: str, max_arguments_bytes: int = 1 << 20) -> None:
        self._id_prefix = id_prefix
        self._limit = max_arguments_bytes
        self._calls: dict[int, _Call] = {}
        self._order: list[_Call] = []
        self._unindexed = -1

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
        call = self._call_for(entry.get("index"), entry.get("id"), name, out)
        if call.complete:
            raise UpstreamProtocolError("upstream sent more of a tool call after it ended")
        if isinstance(entry.get("id"), str) and entry["id"] and not call.call_id:
            call.call_id = entry["id"]
        if isinstance(name, str) and name and not call.name:
            call.name = name
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
            # A later call started: the earlier ones are whole (servers write calls one
            # after the other), so the session core may validate them now.
            for earlier in self._order:
                self._complete(earlier, out)
            call = _Call(index)
            self._calls[index] = call
            self._order.append(call)
        return call

    def _emit(self, call: _Call, out: list[ToolCallFragment]) -> None:
        if not call.name:
            return  # nothing can be said of a call before its name
        if not call.call_id:
            call.call_id = f"{self._id_prefix}_{self._order.index(call)}"
        if call.held or not call.announced:
            out.append(ToolCallFragment(call.call_id, call.name, call.held))
            call.held = ""
            call.announced = True

    def _complete(self, call: _Call, out: list[ToolCallFragment]) -> None:
        if call.complete:
            return
        if not call.name:
            raise UpstreamProtocolError("upstream sent a tool call without a name")
        self._emit(call, out)
        call.complete = True
        out.append(ToolCallFragment(call.call_id, call.name, complete=True))

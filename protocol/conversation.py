"""The conversation history a session sends to its engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the assistant made: its id, the tool and the JSON arguments (text)."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the conversation.

    An assistant turn may carry the tool calls it made; a ``tool`` turn is the
    result of one call (``tool_call_id``), its text the output as JSON.
    """

    role: Role
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def to_wire(self) -> list[Any]:
        """Compact JSON-ready form: ``[role, text]`` plus tool fields when present."""
        if not self.tool_calls and self.tool_call_id is None:
            return [self.role, self.text]
        extra: dict[str, Any] = {}
        if self.tool_calls:
            extra["tool_calls"] = [[c.call_id, c.name, c.arguments] for c in self.tool_calls]
        if self.tool_call_id is not None:
            extra["tool_call_id"] = self.tool_call_id
        return [self.role, self.text, extra]

    @classmethod
    def from_wire(cls, data: list[Any] | tuple[Any, ...]) -> Turn:
        """Inverse of :meth:`to_wire`."""
        extra: dict[str, Any] = data[2] if len(data) > 2 else {}
        calls = tuple(ToolCall(str(i), str(n), str(a)) for i, n, a in extra.get("tool_calls", []))
        call_id = extra.get("tool_call_id")
        return cls(data[0], str(data[1]), calls, str(call_id) if call_id is not None else None)


@dataclass(slots=True)
class Conversation:
    """Ordered turns; assistant turns hold only what the client received."""

    instructions: str | None = None
    turns: list[Turn] = field(default_factory=list)
    version: int = 0
    """Bumped on every change, so a store rewrites the history only when it changed."""

    def add(self, role: Role, text: str) -> None:
        """Append a turn."""
        self.turns.append(Turn(role, text))
        self.version += 1

    def append(self, turn: Turn) -> None:
        """Append a turn with tool fields."""
        self.turns.append(turn)
        self.version += 1

    def replace(self, index: int, turn: Turn) -> None:
        """Rewrite one turn (an assistant turn cut to what the user heard)."""
        self.turns[index] = turn
        self.version += 1

    def pop(self) -> Turn:
        """Remove and return the last turn."""
        self.version += 1
        return self.turns.pop()

    @property
    def awaiting_answer(self) -> bool:
        """Whether the last turn is a user turn or a tool result nobody answered yet."""
        return bool(self.turns) and self.turns[-1].role in ("user", "tool")

    def prompt(self) -> list[Turn]:
        """The turns to send to an engine, instructions first."""
        head = [Turn("system", self.instructions)] if self.instructions else []
        return head + list(self.turns)

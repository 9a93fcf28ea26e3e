"""The conversation history a session sends to its engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]

NO_RESULT_TEXT = '{"error": "no result: the tool call was not answered"}'
"""What a prompt gives the engine for a call with no result (the stored history has none)."""


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

    def prompt(self, instructions: str | None = None) -> list[Turn]:
        """The turns to send to an engine, instructions first, in chat-completions shape.

        ``instructions`` replaces the conversation's for this prompt (``""``: none;
        ``None``: the conversation's own). Each assistant turn that made tool calls is
        followed by one ``tool`` turn per call, in the calls' order: the call's result
        wherever the history has it (a result that came after later turns, as in
        client-driven tool rounds), else :data:`NO_RESULT_TEXT`. A ``tool`` turn whose
        call is not in the history is left out. The stored history is not changed.
        """
        text = self.instructions if instructions is None else instructions
        out = [Turn("system", text)] if text else []
        results: dict[str, list[Turn]] = {}
        shaped = True  # the common case: every result right after its call, none stray
        expected: list[str] = []
        for turn in self.turns:
            if turn.role == "tool" and turn.tool_call_id is not None:
                results.setdefault(turn.tool_call_id, []).append(turn)
                if not expected or expected.pop(0) != turn.tool_call_id:
                    shaped = False
            else:
                if expected or turn.role == "tool":
                    shaped = False
                expected = [c.call_id for c in turn.tool_calls]
        if shaped and not expected:
            return out + self.turns
        for turn in self.turns:
            if turn.role == "tool":
                continue  # placed after its call below, or left out (no call)
            out.append(turn)
            for call in turn.tool_calls:
                answers = results.get(call.call_id)
                if answers:
                    out.append(answers.pop(0))
                else:
                    out.append(Turn("tool", NO_RESULT_TEXT, (), call.call_id))
        return out

"""The conversation history a session sends to its engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the conversation."""

    role: Role
    text: str


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
        """Whether the last turn is a user turn nobody answered yet."""
        return bool(self.turns) and self.turns[-1].role == "user"

    def prompt(self) -> list[Turn]:
        """The turns to send to an engine, instructions first."""
        head = [Turn("system", self.instructions)] if self.instructions else []
        return head + list(self.turns)

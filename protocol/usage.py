"""Token usage accounting."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(slots=True)
class Usage:
    """Tokens in and out: what the engine generated and what reached the client.

    ``output_tokens_generated - output_tokens_delivered`` is waste: tokens the
    engine paid for that nobody received.
    """

    input_tokens: int = 0
    output_tokens_generated: int = 0
    output_tokens_delivered: int = 0

    def add(self, other: Usage) -> None:
        """Accumulate another usage record into this one."""
        self.input_tokens += other.input_tokens
        self.output_tokens_generated += other.output_tokens_generated
        self.output_tokens_delivered += other.output_tokens_delivered

    @property
    def output_tokens_wasted(self) -> int:
        """Generated but never delivered."""
        return max(0, self.output_tokens_generated - self.output_tokens_delivered)

    def to_dict(self) -> dict[str, int]:
        """Wire form (the ``usage`` field of ``response.done``)."""
        return asdict(self)

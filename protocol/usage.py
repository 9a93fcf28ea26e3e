"""Token usage accounting."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(slots=True)
class Usage:
    """Tokens in and out: what the engine generated and what reached the client.

    *Delivered* means written to the client's socket (the event left the outbox
    and got a ``seq``); a client that went silent with its connection open still
    gets tokens "delivered" into kernel buffers nobody reads. *Acknowledged*
    means the client sent an ``ack`` covering the event: proof of receipt.
    ``output_tokens_generated - output_tokens_delivered`` is waste: tokens the
    engine paid for that never left the server.
    """

    input_tokens: int = 0
    output_tokens_generated: int = 0
    output_tokens_delivered: int = 0
    output_tokens_acknowledged: int = 0
    """Tokens of events the client acked (as of when the usage was recorded)."""

    def add(self, other: Usage) -> None:
        """Accumulate another usage record into this one."""
        self.input_tokens += other.input_tokens
        self.output_tokens_generated += other.output_tokens_generated
        self.output_tokens_delivered += other.output_tokens_delivered
        self.output_tokens_acknowledged += other.output_tokens_acknowledged

    @property
    def output_tokens_wasted(self) -> int:
        """Generated but never delivered."""
        return max(0, self.output_tokens_generated - self.output_tokens_delivered)

    def to_dict(self) -> dict[str, int]:
        """Wire form (the ``usage`` field of ``response.done``)."""
        return asdict(self)

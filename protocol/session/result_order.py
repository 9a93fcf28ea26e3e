"""Messages that must not overtake a ``tool.result`` still at the ledger.

A result is applied through the store's ledger (``ApplyToolResult``), and the
reader never waits for the store: the next message is handled while the store
call runs. A message that reads or changes the conversation (``input.text``,
``response.create``, ``response.continue``, ``session.update``,
``input_audio.commit``, a turn the detector committed, a false interruption's
resume) would then see it without the result, and the history would no longer
follow the order the client sent. Such a message waits here until every result
ahead of it is stored, then is handled in order. Control does not wait: an
interrupt, cancel, ack, ping or playback report is handled at once, which is
what the reader gains by not awaiting the store.
"""

from __future__ import annotations

from collections import deque

from protocol.messages import (
    InputAudioCommit,
    InputText,
    ResponseContinue,
    ResponseCreate,
    SessionUpdate,
    ToolResult,
)
from protocol.session.inputs import Input, SpeechDiscarded, TurnCommitted

ORDERED: frozenset[type] = frozenset(
    {
        InputText,
        ResponseCreate,
        ResponseContinue,
        SessionUpdate,
        InputAudioCommit,
        ToolResult,
        TurnCommitted,
        SpeechDiscarded,
    }
)
"""The inputs that keep their order behind a result being stored."""

MAX_WAITING = 256
"""Messages held at once; past it, one is refused (the flood limit keeps this far away)."""


class ResultBarrier:
    """The results at the ledger, and the messages waiting behind them."""

    __slots__ = ("in_flight", "waiting")

    def __init__(self) -> None:
        self.in_flight = 0
        """``ApplyToolResult`` effects whose ``ToolResultStored`` has not come back."""
        self.waiting: deque[Input] = deque()

    def must_wait(self, event: Input) -> bool:
        """Whether ``event`` waits: it keeps its order, and a result is ahead of it.

        A result goes straight to the ledger behind another result (the ledger
        keeps their order), but not past a message that waits.
        """
        if type(event) not in ORDERED:
            return False
        if self.waiting:
            return True
        return self.in_flight > 0 and type(event) is not ToolResult

    def next_ready(self) -> Input | None:
        """The oldest waiting message, if nothing it must follow is still at the ledger."""
        waiting = self.waiting
        if not waiting:
            return None
        if self.in_flight and type(waiting[0]) is not ToolResult:
            return None
        return waiting.popleft()

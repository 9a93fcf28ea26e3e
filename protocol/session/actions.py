"""What the policy modules see of the session core: its state, its effects, its hooks.

``responding`` (a response's engine requests and its end), ``tool_policy``,
``turn_taking`` and ``session_policy`` are functions over this interface, and
:class:`protocol.session.core.SessionCore` implements it. They import it, never the
core itself: the core imports them (its dispatch table), so the dependency runs one
way. Where the response lifecycle must tell the policies above it that something
happened (a tool-call fragment, a round that stopped for its calls, a response that
ended), it calls a hook here, and the core routes it.
"""

from __future__ import annotations

from typing import Protocol

from protocol.errors import ProtocolViolation
from protocol.generation import ToolCallFragment
from protocol.json_schema import CompiledSchema
from protocol.session.core_settings import CoreSettings
from protocol.session.effects import Effect
from protocol.session.inputs import TokenCounts
from protocol.session.responses import ResponseState
from protocol.session.state import ServerSession
from protocol.session.turns import TurnTaking


class CoreActions(Protocol):
    """The session core as its policies act on it."""

    session: ServerSession
    settings: CoreSettings
    attached: bool
    """A transport is attached (its writer numbers events as it sends them)."""
    closed: bool
    """The session ended or moved here: nothing starts any more."""
    generating: bool
    """An engine request runs for the active response."""
    output_schema: CompiledSchema | None
    turns: TurnTaking | None
    engine: TokenCounts | None
    """The running generation's own counts, for the current input (``None``: none runs)."""

    @property
    def tool_timeout(self) -> float:
        """Seconds a round's calls wait for their results."""
        ...

    def emit(self, effect: Effect) -> None:
        """Add an effect to the current input's answer."""
        ...

    def number_for_the_log(self) -> None:
        """Number every queued event now: nobody reads them (no transport is attached)."""
        ...

    def response(self, response_id: str) -> ResponseState | None:
        """The running, unsent or latest response of that id."""
        ...

    def refuse(self, violation: ProtocolViolation) -> None:
        """Queue an in-band ``error`` for a refused message."""
        ...

    def voice(self) -> TurnTaking:
        """The session's turn taking (``audio_not_enabled`` for a text-only session)."""
        ...

    # -- hooks of the response lifecycle, routed by the core -------------------

    def tool_fragment(
        self, response: ResponseState, fragment: ToolCallFragment, tokens: int
    ) -> None:
        """The engine wrote a piece of a tool call (or its end)."""
        ...

    def tools_called(self, response: ResponseState) -> None:
        """The engine stopped this round for its tool calls."""
        ...

    def response_ended(self) -> None:
        """A response ended (its done is queued): what waited for that goes on."""
        ...

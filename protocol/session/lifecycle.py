"""The lifecycle of one response, as one table of phases and triggers.

::

    generating --tool_calls--> awaiting_tools --next_round--> generating
    generating --retry-------> generating       (an invalid call is written again)
    generating --end---------> ended
    awaiting_tools --end-----> ended

Every other (phase, trigger) is a programming error, raised as
:class:`LifecycleError`, never a silent no-op. A response is created
``generating`` and queues exactly one ``response.done`` on ``end``.
"""

from __future__ import annotations

import enum

from protocol.errors import ProtocolError


class Phase(enum.StrEnum):
    """Where a response is in its life."""

    GENERATING = "generating"
    """An engine request runs (or is being made) for it."""
    AWAITING_TOOLS = "awaiting_tools"
    """The engine stopped for tool calls; the round's text and calls are in the history."""
    ENDED = "ended"
    """Its ``response.done`` is queued or sent."""


class Trigger(enum.StrEnum):
    """What moves a response from one phase to the next."""

    TOOL_CALLS = "tool_calls"
    """The engine finished a round with tool calls."""
    NEXT_ROUND = "next_round"
    """Every result of the round is in: the engine is asked again."""
    RETRY = "retry"
    """An invalid call was refused: a new engine request writes it again."""
    END = "end"
    """The response ended (any status)."""


TRANSITIONS: dict[tuple[Phase, Trigger], Phase] = {
    (Phase.GENERATING, Trigger.TOOL_CALLS): Phase.AWAITING_TOOLS,
    (Phase.GENERATING, Trigger.RETRY): Phase.GENERATING,
    (Phase.GENERATING, Trigger.END): Phase.ENDED,
    (Phase.AWAITING_TOOLS, Trigger.NEXT_ROUND): Phase.GENERATING,
    (Phase.AWAITING_TOOLS, Trigger.END): Phase.ENDED,
}


class LifecycleError(ProtocolError):
    """A trigger that the lifecycle table does not allow in the current phase."""


def advance(phase: Phase, trigger: Trigger) -> Phase:
    """The phase after ``trigger``; raises :class:`LifecycleError` if it is not allowed."""
    try:
        return TRANSITIONS[phase, trigger]
    except KeyError:
        raise LifecycleError(
            f"trigger {trigger.value} is not allowed in phase {phase.value}"
        ) from None

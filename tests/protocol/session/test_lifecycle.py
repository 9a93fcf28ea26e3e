"""The response lifecycle table: every trigger in every phase."""

from __future__ import annotations

import pytest

from protocol.session.lifecycle import TRANSITIONS, LifecycleError, Phase, Trigger, advance

EXPECTED = {
    (Phase.GENERATING, Trigger.TOOL_CALLS): Phase.AWAITING_TOOLS,
    (Phase.GENERATING, Trigger.RETRY): Phase.GENERATING,
    (Phase.GENERATING, Trigger.END): Phase.ENDED,
    (Phase.AWAITING_TOOLS, Trigger.NEXT_ROUND): Phase.GENERATING,
    (Phase.AWAITING_TOOLS, Trigger.END): Phase.ENDED,
}


def test_the_table_is_exactly_the_documented_one() -> None:
    assert TRANSITIONS == EXPECTED


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("trigger", list(Trigger))
def test_every_trigger_in_every_phase(phase: Phase, trigger: Trigger) -> None:
    """Allowed moves go where the table says; every other one raises, never a no-op."""
    expected = EXPECTED.get((phase, trigger))
    if expected is None:
        with pytest.raises(LifecycleError, match=f"{trigger.value} is not allowed"):
            advance(phase, trigger)
    else:
        assert advance(phase, trigger) is expected


def test_an_ended_response_takes_no_trigger() -> None:
    for trigger in Trigger:
        with pytest.raises(LifecycleError):
            advance(Phase.ENDED, trigger)

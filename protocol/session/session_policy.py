"""What the transport's coming and going, the session's timers and the worker do to a session.

A lost transport leaves the running response generating for the grace period;
a client's close aborts it at once (and a normal close ends the session); a
session nobody resumes within the resume window is forgotten here; a drain
that runs out of time, a takeover and a lost worker end what runs.
"""

from __future__ import annotations

from protocol.session import responding, tool_policy
from protocol.session.actions import CoreActions
from protocol.session.effects import (
    PERSIST,
    AbortGeneration,
    ArmTimer,
    CancelTimer,
    EndSession,
    RecordUsage,
)
from protocol.session.inputs import (
    Departure,
    ResponseLost,
    SessionEnding,
    SessionMoved,
    StopRunning,
    TimerFired,
    TimerKind,
    TransportAttached,
    TransportDeparted,
)
from protocol.session.responses import ResponseStatus


def attached(core: CoreActions, event: TransportAttached) -> None:
    core.attached = True
    core.emit(CancelTimer(TimerKind.GRACE))
    core.emit(CancelTimer(TimerKind.EXPIRY))


def departed(core: CoreActions, event: TransportDeparted) -> None:
    core.attached = False
    active = core.session.active
    if event.departure is Departure.LOST:
        if active is not None:
            core.emit(ArmTimer(TimerKind.GRACE, core.settings.grace_period))
    elif active is not None:
        responding.stop(core, active, ResponseStatus.CANCELLED, reason=event.reason)
    if event.departure is Departure.ENDED:
        core.emit(EndSession(remove_from_store=True))
    else:
        core.emit(ArmTimer(TimerKind.EXPIRY, core.settings.resume_window))
    # Whatever was numbered for the departed client goes to the store now.
    core.emit(PERSIST)


def timer(core: CoreActions, event: TimerFired) -> None:
    if event.kind is TimerKind.TOOL_WAIT:
        tool_policy.on_timeout(core)
    elif event.kind is TimerKind.EXPIRY:
        # The store keeps the record (and its snapshot) until its own TTL.
        core.emit(EndSession(remove_from_store=False))
    else:
        active = core.session.active
        if not core.attached and active is not None:
            responding.stop(core, active, ResponseStatus.INCOMPLETE, reason="client_gone")
            # Nobody may come back for the response.done: record usage now.
            core.emit(RecordUsage(include_unsent=True))


def ending(core: CoreActions, event: SessionEnding) -> None:
    if core.closed:
        return
    core.closed = True
    core.emit(CancelTimer(TimerKind.GRACE))
    core.emit(CancelTimer(TimerKind.EXPIRY))
    active = core.session.active
    if active is not None:
        responding.stop(core, active, ResponseStatus.INCOMPLETE, reason="session_expired")
    core.session.number_pending()
    core.emit(RecordUsage(include_unsent=True))
    core.emit(PERSIST)


def moved(core: CoreActions, event: SessionMoved) -> None:
    if core.closed:
        return
    core.closed = True
    core.emit(CancelTimer(TimerKind.GRACE))
    core.emit(CancelTimer(TimerKind.EXPIRY))
    if core.generating:
        # The new owner ends this response; generating on would be for nobody.
        core.generating = False
        core.emit(AbortGeneration())
    # The runtime lets its transport go without a departure and closes it (session_moved).
    core.attached = False


def stop_running(core: CoreActions, event: StopRunning) -> None:
    active = core.session.active
    if active is not None:
        responding.stop(core, active, ResponseStatus.INCOMPLETE, reason=event.reason)
        core.emit(PERSIST)


def lost(core: CoreActions, event: ResponseLost) -> None:
    response = core.response(event.response_id)
    assert response is not None, f"no response {event.response_id}"
    # The store's text is all that survived; a client that saw more trims to it.
    core.session.end_response(
        response,
        ResponseStatus.FAILED,
        reason=event.reason,
        details={"persisted_chars": response.generated_chars},
    )
    core.emit(PERSIST)

"""The session core's dispatch table and its client-message decisions, without a loop."""

from __future__ import annotations

import typing

from protocol.codes import CloseCode
from protocol.generation import FinishReason
from protocol.session.core import HANDLERS
from protocol.session.effects import (
    AbortGeneration,
    ArmTimer,
    CancelTimer,
    Close,
    EndSession,
    Persist,
    RecordUsage,
    StartGeneration,
    Wake,
)
from protocol.session.inputs import (
    Departure,
    EngineCounts,
    EngineFinished,
    Input,
    SessionEnding,
    SessionMessage,
    TimerFired,
    TimerKind,
    TransportDeparted,
)
from protocol.session.responses import SessionLimits
from tests.protocol.io_audit import watch_io
from tests.protocol.session.drive import Driver, kinds, of_type


def test_one_table_takes_every_input_and_every_session_message() -> None:
    inputs = set(typing.get_args(Input))
    messages = set(typing.get_args(SessionMessage))
    assert messages <= inputs
    assert set(HANDLERS) == inputs - {SessionMessage} | messages - {SessionMessage}


def test_a_response_create_starts_a_generation_and_wakes() -> None:
    drive = Driver()
    effects = drive.send(type="response.create", input="hi", id="r1")
    assert kinds(effects) == ["StartGeneration", "Wake", "Persist"]
    start = effects[0]
    assert isinstance(start, StartGeneration)
    assert start.request.request_id == f"sess/{start.response_id}"
    assert [t.role for t in start.request.prompt] == ["user"]
    (created,) = drive.read()
    assert created["type"] == "response.created"
    assert created["request_id"] == "r1"


def test_a_resent_request_id_is_refused_and_starts_nothing() -> None:
    """Request dedupe: the id of a request that already started a response."""
    drive = Driver()
    first = drive.start(id="r1")
    drive.finish(first, FinishReason.STOP)
    drive.read()
    effects = drive.send(type="response.create", input="again", id="r1")
    assert not [e for e in effects if isinstance(e, StartGeneration)]
    (error,) = drive.read()
    assert (error["type"], error["code"], error["request_id"]) == (
        "error",
        "duplicate_request",
        "r1",
    )
    assert error["response_id"] == first


def test_a_second_request_while_one_runs_is_refused() -> None:
    drive = Driver()
    drive.start()
    effects = drive.send(type="response.create", input="more", id="r2")
    assert kinds(effects) == ["Wake", "Persist"]
    assert of_type(drive.read(), "error")[0]["code"] == "response_in_progress"


def test_an_interrupt_aborts_first_and_queues_one_complete_done() -> None:
    drive = Driver()
    response = drive.start()
    drive.output(response, "partial answer")
    drive.read()
    effects = drive.send(EngineCounts(3, 9), type="response.interrupt", rendered_chars=7)
    assert isinstance(effects[0], AbortGeneration)
    assert effects[-2:] == [Wake(), Persist()]
    (done,) = drive.read()
    assert (done["status"], done["reason"]) == ("interrupted", "client")
    assert done["usage"]["output_tokens_generated"] == 9, "the engine's own count"
    turns = drive.session.conversation.turns
    assert turns[-1].text == "partial", "the history keeps what the client rendered"


def test_a_lost_transport_arms_the_grace_timer_and_its_firing_ends_the_response() -> None:
    drive = Driver()
    response = drive.start()
    effects = drive.feed(TransportDeparted(Departure.LOST, "connection_lost"))
    assert ArmTimer(TimerKind.GRACE, drive.core.settings.grace_period) in effects
    assert ArmTimer(TimerKind.EXPIRY, drive.core.settings.resume_window) in effects
    assert drive.session.active is not None, "it generates on through the grace period"
    effects = drive.feed(TimerFired(TimerKind.GRACE), EngineCounts(3, 4))
    assert AbortGeneration() in effects
    assert RecordUsage(include_unsent=True) in effects
    (done,) = of_type(drive.read(), "response.done")
    assert (done["response_id"], done["status"], done["reason"]) == (
        response,
        "incomplete",
        "client_gone",
    )


def test_a_client_close_aborts_at_once_and_an_end_ends_the_session() -> None:
    drive = Driver()
    drive.start()
    effects = drive.feed(TransportDeparted(Departure.ENDED, "client_closed"))
    assert AbortGeneration() in effects
    assert EndSession(remove_from_store=True) in effects
    assert of_type(drive.read(), "response.done")[0]["status"] == "cancelled"


def test_a_resumable_close_aborts_and_keeps_the_session() -> None:
    drive = Driver()
    drive.start()
    effects = drive.feed(TransportDeparted(Departure.CLOSED_RESUMABLE, "client_closed"))
    assert AbortGeneration() in effects
    assert not [e for e in effects if isinstance(e, EndSession)]
    assert ArmTimer(TimerKind.EXPIRY, drive.core.settings.resume_window) in effects


def test_the_session_ending_numbers_everything_and_records_usage_once() -> None:
    drive = Driver()
    drive.start()
    effects = drive.feed(SessionEnding())
    assert CancelTimer(TimerKind.GRACE) in effects
    assert RecordUsage(include_unsent=True) in effects
    assert len(drive.session.outbox) == 0, "numbered for the store"
    assert drive.feed(SessionEnding()) == [], "a second end does nothing"


def test_with_a_shared_log_what_a_detached_session_queues_is_numbered_for_it_at_once() -> None:
    # The store's snapshot says the response ended: its done must be in the log too, or
    # a resume on another worker gets the text and never a done.
    drive = Driver(log_shared=True)
    response = drive.start()
    drive.output(response, "hello")
    drive.read()
    drive.feed(TransportDeparted(Departure.LOST, "connection_lost"))
    last = drive.session.last_seq
    effects = drive.feed(EngineFinished(response, FinishReason.STOP), EngineCounts(3, 1))
    assert Persist() in effects
    # No writer here will send the done and settle it: its usage is recorded now.
    assert RecordUsage(include_unsent=True) in effects
    assert len(drive.session.outbox) == 0
    assert drive.session.last_seq == last + 1
    done = drive.session.replay_after(last)[-1]
    assert (done.type, done.seq) == ("response.done", last + 1)
    # A worker whose log is its own numbers nothing until a client reads (it replays).
    local = Driver()
    response = local.start()
    local.feed(TransportDeparted(Departure.LOST, "connection_lost"))
    last = local.session.last_seq
    effects = local.feed(EngineFinished(response, FinishReason.STOP), EngineCounts(3, 1))
    assert Persist() not in effects and local.session.last_seq == last


def test_an_outbox_past_its_bound_closes_a_slow_consumer() -> None:
    drive = Driver(limits=SessionLimits(outbox_max_bytes=100))
    response = drive.start()
    effects = drive.output(response, "x" * 200)
    assert Close(CloseCode.SLOW_CONSUMER, "slow consumer: resume") in effects


def test_the_core_does_no_io() -> None:
    with watch_io() as seen:
        drive = Driver()
        response = drive.start()
        drive.output(response, "text")
        drive.finish(response, FinishReason.STOP)
        drive.read()
    assert seen == []

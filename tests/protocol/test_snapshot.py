"""Snapshots: what another worker rebuilds a session from."""

from __future__ import annotations

from protocol.events import Event
from protocol.session import ResponseStatus, ServerSession, SessionLimits
from protocol.snapshot import (
    ConversationSnapshot,
    StreamSnapshot,
    conversation_snapshot,
    restore_session,
    stream_snapshot,
)


def _running_session() -> tuple[ServerSession, list[Event]]:
    session = ServerSession("s1", SessionLimits(), instructions="be brief")
    session.add_user_text("first question")
    response = session.begin_response()
    for word in ["one", " two"]:
        session.record_output(response, word, 1)
        session.number_pending()
    session.add_user_text("typed while it answered")
    return session, session.number_pending()


def test_round_trip_restores_history_seq_and_the_running_response() -> None:
    session, _ = _running_session()
    events = list(session.replay.after(0))
    conversation = ConversationSnapshot.from_dict(conversation_snapshot(session).to_dict())
    stream = StreamSnapshot.from_dict(stream_snapshot(session).to_dict())
    restored, lost = restore_session(
        "s1", conversation, stream, events[1:], client_last_seq=1, partial_text="one two"
    )
    assert lost is not None and lost.id == "resp_1"
    assert restored.last_seq == session.last_seq
    assert [e.seq for e in restored.replay_after(1)] == [e.seq for e in events[1:]]
    restored.end_response(lost, ResponseStatus.FAILED, reason="worker_lost")
    turns = [(t.role, t.text) for t in restored.history()]
    assert turns == [
        ("system", "be brief"),
        ("user", "first question"),
        ("assistant", "one two"),
        ("user", "typed while it answered"),
    ]
    done = restored.number_pending()[-1].to_message()
    assert (done["status"], done["usage"]["output_tokens_delivered"]) == ("failed", 2)


def test_numbering_continues_after_a_client_that_is_ahead_of_the_store() -> None:
    session, _ = _running_session()
    stream = stream_snapshot(session)
    restored, lost = restore_session(
        "s1",
        conversation_snapshot(session),
        stream,
        [],
        client_last_seq=stream.last_seq + 3,
        partial_text="one two",
    )
    assert lost is not None
    restored.end_response(lost, ResponseStatus.FAILED, reason="worker_lost")
    restored.begin_response()
    done, created = restored.number_pending()
    # The client already holds up to last_seq + 3 from the old worker: no number is reused.
    assert (done.seq, created.seq) == (stream.last_seq + 4, stream.last_seq + 5)
    assert created.to_message()["response_id"] == "resp_2"

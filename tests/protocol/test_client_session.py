from __future__ import annotations

import pytest

from protocol.client_session import TRUNCATED, ClientSession, ClientState, SequenceGap
from protocol.codes import Disposition


def _ready(client: ClientSession) -> None:
    client.start_message()
    client.receive(
        {"type": "session.ready", "session_id": "s1", "resume_token": "tok", "last_seq": 0}
    )


def test_dedup_by_seq_and_last_seen() -> None:
    client = ClientSession()
    _ready(client)
    assert client.state is ClientState.OPEN
    first = {"type": "response.created", "seq": 1, "response_id": "r1"}
    assert client.receive(first) == [first]
    assert client.receive(first) == []
    assert client.duplicates == 1
    assert client.last_seq == 1
    assert client.open_responses == ["r1"]


def test_gap_is_an_error_not_papered_over() -> None:
    client = ClientSession()
    _ready(client)
    with pytest.raises(SequenceGap):
        client.receive({"type": "response.created", "seq": 2, "response_id": "r1"})


def test_connection_messages_pass_through_without_seq() -> None:
    client = ClientSession()
    _ready(client)
    heartbeat = {"type": "heartbeat", "server_time_ms": 1, "last_seq": 0}
    assert client.receive(heartbeat) == [heartbeat]
    assert client.last_seq == 0


def test_resume_request_and_truncation_when_resume_is_refused() -> None:
    client = ClientSession()
    _ready(client)
    client.receive({"type": "response.created", "seq": 1, "response_id": "r1"})
    client.receive({"type": "response.text.delta", "seq": 2, "response_id": "r1", "delta": "a"})
    assert client.connection_lost(None) is Disposition.RESUME
    assert client.state is ClientState.DISCONNECTED
    assert client.resume_message() == {
        "type": "session.resume",
        "session_id": "s1",
        "resume_token": "tok",
        "last_seq": 2,
    }
    refused = {"type": "error", "code": "replay_unavailable", "message": "gone"}
    events = client.receive(refused)
    assert events[0] == refused
    assert events[1] == {"type": TRUNCATED, "response_id": "r1", "reason": "resume_failed"}
    assert client.state is ClientState.CLOSED
    assert client.connection_lost(None) is Disposition.TERMINAL


def test_resumed_session_keeps_counting() -> None:
    client = ClientSession()
    _ready(client)
    client.receive({"type": "response.created", "seq": 1, "response_id": "r1"})
    client.connection_lost(1006)
    client.resume_message()
    client.receive({"type": "session.ready", "session_id": "s1", "resumed": True, "last_seq": 1})
    assert client.state is ClientState.OPEN
    assert client.last_seq == 1
    done = {"type": "response.done", "seq": 2, "response_id": "r1", "status": "completed"}
    assert client.receive(done) == [done]
    assert client.open_responses == []


def test_terminal_close_truncates_open_responses() -> None:
    client = ClientSession()
    _ready(client)
    client.receive({"type": "response.created", "seq": 1, "response_id": "r1"})
    assert client.connection_lost(1000) is Disposition.TERMINAL
    assert client.give_up("closed") == [
        {"type": TRUNCATED, "response_id": "r1", "reason": "closed"}
    ]


def test_no_session_means_nothing_to_resume() -> None:
    client = ClientSession()
    client.start_message()
    assert client.connection_lost(1006) is Disposition.TERMINAL


def test_acks_every_n_events() -> None:
    client = ClientSession(ack_every=2)
    _ready(client)
    client.receive({"type": "error", "seq": 1, "code": "x", "message": "m"})
    assert client.ack_message() is None
    client.receive({"type": "error", "seq": 2, "code": "x", "message": "m"})
    assert client.ack_message() == {"type": "ack", "seq": 2}
    assert client.ack_message(force=True) is None


def test_a_second_end_of_a_response_after_a_takeover_is_dropped() -> None:
    """The old worker died after the client saw r1 end, before storing it: the new owner
    ends r1 ``failed`` after the resume. The application sees r1 end once."""
    client = ClientSession()
    _ready(client)
    client.receive({"type": "response.created", "seq": 1, "response_id": "r1"})
    completed = {"type": "response.done", "seq": 2, "response_id": "r1", "status": "completed"}
    assert client.receive(completed) == [completed]
    client.connection_lost(None)
    client.resume_message()
    ready = {"type": "session.ready", "session_id": "s1", "lost_after_seq": 1}
    assert client.receive(ready) == [ready]
    failed = {"type": "response.done", "seq": 3, "response_id": "r1", "status": "failed"}
    assert client.receive(failed) == []
    assert client.duplicate_ends == 1 and client.last_seq == 3
    # A response the client never saw start still reaches the application.
    other = {"type": "response.done", "seq": 4, "response_id": "r0", "status": "failed"}
    assert client.receive(other) == [other]


def test_a_response_ended_as_truncated_does_not_end_again() -> None:
    client = ClientSession()
    _ready(client)
    client.receive({"type": "response.created", "seq": 1, "response_id": "r1"})
    client.connection_lost(None)
    client.resume_message()
    ready = {"type": "session.ready", "session_id": "s1", "lost_after_seq": 0}
    assert client.receive(ready)[1] == {
        "type": TRUNCATED,
        "response_id": "r1",
        "reason": "worker_lost",
    }
    late = {"type": "response.done", "seq": 2, "response_id": "r1", "status": "failed"}
    assert client.receive(late) == []


def test_only_the_last_ended_responses_are_remembered() -> None:
    client = ClientSession()
    _ready(client)
    for n in range(100):
        client.receive({"type": "response.created", "seq": 2 * n + 1, "response_id": f"r{n}"})
        client.receive({"type": "response.done", "seq": 2 * n + 2, "response_id": f"r{n}"})
    assert len(client.ended) == 64 and client.ended[-1] == "r99"

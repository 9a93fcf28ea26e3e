"""Client and server state machines wired together through a lossy, resumable 'network'."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.client_session import ClientSession
from protocol.codes import Disposition, ErrorCode
from protocol.errors import ResumeRefused
from protocol.session import ResponseStatus, ServerSession, SessionLimits


class Link:
    """A connection: events the server sent that have not reached the client yet."""

    def __init__(self) -> None:
        self.in_flight: list[dict[str, object]] = []
        self.up = True


def _connect(server: ServerSession, client: ClientSession) -> None:
    client.start_message()
    client.receive(
        {
            "type": "session.ready",
            "session_id": server.session_id,
            "resume_token": "t",
            "last_seq": server.last_seq,
        }
    )


@given(
    ops=st.lists(
        st.sampled_from(["generate", "send", "deliver", "drop", "resume", "ack"]),
        min_size=1,
        max_size=200,
    ),
    tokens=st.integers(min_value=1, max_value=60),
)
@settings(max_examples=300, deadline=None)
def test_any_interleaving_delivers_the_exact_text_once(ops: list[str], tokens: int) -> None:
    server = ServerSession("s", SessionLimits(replay_max_events=10_000))
    client = ClientSession(ack_every=5)
    _connect(server, client)
    server.add_user_text("q")
    response = server.begin_response()
    words = [f"w{i} " for i in range(tokens)]
    generated = 0
    link = Link()
    received: list[str] = []

    def deliver() -> None:
        while link.in_flight:
            for event in client.receive(link.in_flight.pop(0)):
                if event["type"] == "response.text.delta":
                    received.append(str(event["delta"]))
            ack = client.ack_message()
            if ack is not None:
                server.ack(int(ack["seq"]))  # type: ignore[call-overload]

    for op in [*ops, "resume", "finish"]:
        if op == "generate" and generated < tokens:
            server.record_output(response, words[generated], 1)
            generated += 1
        elif op == "send" and link.up:
            event = server.next_event()
            if event is not None:
                link.in_flight.append(event.to_message())
        elif op == "deliver" and link.up:
            deliver()
        elif op == "drop" and link.up:
            # Frames in flight are lost with the connection.
            link.in_flight.clear()
            link.up = False
            assert client.connection_lost(None) is Disposition.RESUME
        elif op == "resume" and not link.up:
            request = client.resume_message()
            replay = server.replay_after(int(request["last_seq"]))  # type: ignore[call-overload]
            client.receive({"type": "session.ready", "session_id": "s", "resumed": True})
            link.up = True
            link.in_flight = [e.to_message() for e in replay]
            deliver()
        elif op == "finish":
            while generated < tokens:
                server.record_output(response, words[generated], 1)
                generated += 1
            server.end_response(response, ResponseStatus.COMPLETED)
            while (event := server.next_event()) is not None:
                link.in_flight.append(event.to_message())
            deliver()

    assert "".join(received) == "".join(words)
    assert client.open_responses == []
    assert server.usage.output_tokens_delivered == tokens
    assert server.usage.output_tokens_generated == tokens


def test_replay_after_ack_trim_refuses_an_older_resume() -> None:
    server = ServerSession("s", SessionLimits())
    server.add_user_text("q")
    response = server.begin_response()
    for i in range(5):
        server.record_output(response, str(i), 1)
        server.next_event()
    server.ack(3)
    assert [e.seq for e in server.replay_after(3)] == [4, 5]
    with pytest.raises(ResumeRefused) as info:
        server.replay_after(2)
    assert info.value.code is ErrorCode.REPLAY_UNAVAILABLE

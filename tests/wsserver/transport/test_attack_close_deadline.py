"""Peers that never finish a closing handshake, on both send paths.

The fast path lost its own cut (``FastConnection._cut_at_deadline``): the connection
class's cut (``control_frames``) must let every such connection go at the close
deadline, whoever started the close, with no output, heartbeat or keepalive ping to
find the peer otherwise.
"""

from __future__ import annotations

import struct

import pytest

from tests.wsserver.conftest import StartServer
from tests.wsserver.transport.test_hostile_frames import WAIT, RawSocket, frame
from tests.wsserver.wire import wait_until

pytestmark = pytest.mark.both_engines

QUIET = {"close_timeout": 0.3, "heartbeat_interval": 600.0, "ping_interval": 600.0}


async def test_a_peer_that_sends_a_close_frame_and_keeps_tcp_open_is_let_go(
    start_server: StartServer,
) -> None:
    server = await start_server(**QUIET)
    client = await RawSocket.open(server)
    try:
        client.send_json({"type": "session.start"})
        ready = await client.until_type("session.ready")
        client.send(frame(0x8, struct.pack("!H", 1000) + b"bye"))
        assert await client.close_code() == 1000
        # It never closes its side of the TCP connection.
        await wait_until(lambda: not server.connections, timeout=WAIT)
        assert ready["session_id"] not in server.sessions, "an explicit close ends it"
    finally:
        client.abort()


async def test_a_peer_that_never_answers_the_servers_close_frame_is_let_go(
    start_server: StartServer,
) -> None:
    # No session.start: the worker closes (handshake timeout); the peer reads the
    # close frame and answers nothing, TCP open.
    server = await start_server(**QUIET, handshake_timeout=0.2)
    client = await RawSocket.open(server)
    try:
        assert await client.close_code() != 1000
        await wait_until(lambda: not server.connections, timeout=WAIT)
    finally:
        client.abort()


async def test_a_peer_that_never_answers_a_close_mid_answer_is_let_go(
    start_server: StartServer,
) -> None:
    # A terminal close while output streams (a message flood), frames still written
    # by the send path until the close frame: the peer then goes silent.
    server = await start_server(
        **QUIET, max_messages_per_second=1, max_message_burst=3, answer_tokens=50_000
    )
    client = await RawSocket.open(server)
    try:
        client.send_json({"type": "session.start"})
        await client.until_type("session.ready")
        client.send_json({"type": "response.create", "input": "go"})
        await client.until_type("response.text.delta")
        for _ in range(5):
            client.send_json({"type": "ping"})
        assert await client.close_code() == 4005
        await wait_until(lambda: not server.connections, timeout=WAIT)
    finally:
        client.abort()

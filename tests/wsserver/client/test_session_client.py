"""The asyncio SDK's facade against a real worker: open, ask, events, close."""

from __future__ import annotations

import pytest

from tests.wsserver.conftest import StartServer, url_of
from wsserver.client import Backoff, SessionClient, SessionClosed


async def test_ask_and_events_in_order(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=30)
    async with SessionClient(url_of(server), encoding="msgpack") as client:
        assert client.session_id is not None
        assert client.ready["limits"]["max_output_tokens"] == 4096
        first = await client.ask("one")
        second = await client.ask("two")
    assert first.status == second.status == "completed"
    assert (first.response_id, second.response_id) == ("resp_1", "resp_2")
    assert first.usage["output_tokens_delivered"] == 30
    assert len(first.text.split()) == 30


async def test_close_ends_the_session_for_the_app(start_server: StartServer) -> None:
    server = await start_server()
    client = SessionClient(url_of(server))
    await client.open()
    await client.close()
    # What arrived before the close is still readable, then the end is signalled.
    assert (await client.next_event(1))["type"] == "session.ready"
    with pytest.raises(SessionClosed):
        await client.next_event(1)
    with pytest.raises(SessionClosed):
        await client.send_text("after close")


async def test_open_fails_cleanly_without_a_server() -> None:
    client = SessionClient("ws://127.0.0.1:9", open_timeout=1.0, backoff=Backoff(max_attempts=1))
    with pytest.raises((SessionClosed, TimeoutError, OSError)):
        await client.open()


# The SDK's public surface as the README, the CLI, the load tests and the SDK's users
# reach it: methods, properties and attributes (every one settable, as it always was).
PUBLIC_NAMES = {
    *("open", "close", "drop_connection", "send", "send_text", "create_response", "ask"),
    *("continue_response", "interrupt", "cancel", "ping", "next_event", "events"),
    *("collect_response", "send_audio", "stream_audio", "commit_audio", "clear_audio"),
    *("report_playback", "register_tool", "send_tool_result", "url", "session_id"),
    *("last_seq", "urls", "state", "codec", "subprotocol", "instructions", "audio"),
    *("max_output_tokens", "reconnect", "backoff", "open_timeout", "close_timeout", "ssl"),
    *("ready", "reconnects", "close_code", "close_codes", "sequence_gaps", "toolbox"),
    *("run_tools", "microphone", "player", "sample_rate", "playback_report_interval"),
}


def test_the_public_names_stay() -> None:
    client = SessionClient("ws://127.0.0.1:1")
    names = {n for n in dir(client) if not n.startswith("_")}
    assert names >= PUBLIC_NAMES, PUBLIC_NAMES - names

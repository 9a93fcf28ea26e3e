"""The connection's reader never waits for the store.

A ``tool.result`` is applied through the store's ledger in a task; the reader
goes back to reading at once, so an interrupt sent right after it is handled
while that store call is still pending. The store here is a real Redis, paused
with ``CLIENT PAUSE`` for as long as the test needs, and unpaused by the test.
"""

from __future__ import annotations

import json

import redis

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.event_checks import of_type
from tests.wsserver.session.test_tool_calls import PARIS, WEATHER, result, tool_turns
from tests.wsserver.wire import RawClient, wait_until

_PAUSE_MS = 60_000
"""Upper bound of the pause (the test unpauses long before): a safety net, not a timing."""


async def test_interrupt_after_a_tool_result_is_handled_while_the_store_call_waits(
    start_server: StartServer, redis_url: str
) -> None:
    # Store calls must wait for the pause, not give up on it.
    server = await start_server(store=redis_url, store_timeout=_PAUSE_MS / 1000)
    client = await RawClient.connect(url_of(server))
    ready = await client.start(tools=[WEATHER])
    session_id = ready["session_id"]
    runtime = server.sessions[session_id]
    await client.send({"type": "response.create", "input": PARIS})
    call = await client.until("response.tool_call")
    # The call is in the ledger before Redis stops answering.
    await wait_until(lambda: runtime.ledger.idle)
    admin = redis.Redis.from_url(redis_url)
    admin.execute_command("CLIENT", "PAUSE", _PAUSE_MS, "WRITE")
    try:
        await client.send(result(call["call_id"], {"temp_c": 8}))
        await client.send({"type": "response.interrupt"})
        done = await client.until("response.done")
        assert done["status"] == "interrupted"
        assert not runtime.ledger.idle, "the result's store call is still pending"
        assert of_type(client.seen, "tool.result.accepted") == []
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()
    accepted = await client.until("tool.result.accepted")
    assert (accepted["call_id"], accepted["duplicate"]) == (call["call_id"], False)
    await wait_until(lambda: len(tool_turns(server, session_id)) == 1)
    assert json.loads(tool_turns(server, session_id)[0].text) == {"temp_c": 8}
    await client.close()

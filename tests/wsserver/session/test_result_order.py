"""Over a real socket: what is sent after a ``tool.result`` is handled after it.

The reader hands the result to the ledger and goes on reading; the session core
keeps the messages that read the conversation behind it (see
``protocol/session/result_order.py``). Sent back to back, as a client does after an
interrupt, a result and a ``response.create`` give an answer made from the result.
"""

from __future__ import annotations

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.event_checks import of_type
from tests.wsserver.session.test_tool_calls import PARIS, WEATHER
from tests.wsserver.wire import RawClient


async def test_a_result_then_create_at_once_answers_from_the_result(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=50.0)
    client = await RawClient.connect(url_of(server))
    ready = await client.start(tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS})
    call = await client.until("response.tool_call")
    await client.send({"type": "response.interrupt"})
    await client.until("response.done")
    start = len(client.seen)
    # Back to back: the create reaches the worker while the result is at the ledger.
    await client.send(
        {"type": "tool.result", "call_id": call["call_id"], "output": {"temp_c": 8}, "id": "t1"}
    )
    await client.send({"type": "response.create", "id": "again", "max_output_tokens": 30})
    done = await client.until("response.done")
    events = client.seen[start:]
    assert not of_type(events, "error"), of_type(events, "error")
    kinds = [e["type"] for e in events if e["type"] != "response.text.delta"]
    assert kinds.index("tool.result.accepted") < kinds.index("response.created")
    assert done["status"] == "completed"
    runtime = server.manager.sessions[ready["session_id"]]
    roles = [t.role for t in runtime.session.conversation.turns]
    assert roles[-3:] == ["assistant", "tool", "assistant"], roles
    await client.close()

"""The tool loop over real sockets: calls, results, rounds, failures and resume.

A response that calls tools streams each call's arguments as provisional
``response.tool_call.delta`` events, announces the complete, schema-valid call
with ``response.tool_call``, waits for the client's ``tool.result`` (applied
once, by call id, through the store's ledger) and then goes on, ending with a
single ``response.done``. These tests drive that loop from a raw client on
loopback, against an in-process worker with the simulated engine and its
scripts (see ``wsserver/engine/scripted.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from protocol.encoding import MSGPACK_SUBPROTOCOL
from protocol.tool_loop import CallState
from tests.wsserver.bait import schema_bait
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.event_checks import consistent, of_type
from tests.wsserver.wire import RawClient, text_of, wait_until
from wsserver.worker.server import WorkerServer

WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "current weather of a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}

STOCK: dict[str, Any] = {
    "name": "lookup_stock",
    "description": "latest price of a ticker",
    "parameters": {
        "type": "object",
        "properties": {"symbol": {"type": "string"}, "exchange": {"enum": ["NYSE", "LSE"]}},
        "required": ["symbol", "exchange"],
    },
}

# Arguments long enough (hundreds of fragments, one per decode step) that a test
# can act after the first delta and well before the call completes.
LEDGER: dict[str, Any] = {
    "name": "fill_form",
    "description": "a form with many fields",
    "parameters": {
        "type": "object",
        "properties": {f"field_{i:02d}": {"type": "string"} for i in range(16)},
    },
}

PARIS = "what is the weather in Paris?"
PARIS_AND_LONDON = "what is the weather in Paris and London?"


# -- helpers -----------------------------------------------------------------


async def open_session(server: WorkerServer, **fields: Any) -> tuple[RawClient, dict[str, Any]]:
    client = await RawClient.connect(url_of(server))
    ready = await client.start(**fields)
    return client, ready


async def collect_until(
    client: RawClient, msg_type: str, timeout: float = 15.0
) -> list[dict[str, Any]]:
    """Messages read until (and including) the first of ``msg_type``."""
    start = len(client.seen)
    await client.until(msg_type, timeout)
    return client.seen[start:]


async def wait_for_calls(client: RawClient, count: int) -> list[dict[str, Any]]:
    """Read until ``count`` ``response.tool_call`` events have come; returns them."""
    calls: list[dict[str, Any]] = []
    while len(calls) < count:
        calls += of_type(await collect_until(client, "response.tool_call"), "response.tool_call")
    return calls


def assert_gap_free(messages: list[dict[str, Any]], first: int = 1) -> None:
    seqs = [m["seq"] for m in messages if "seq" in m]
    assert seqs == list(range(first, first + len(seqs))), f"seqs not gap-free: {seqs}"


def tool_turns(server: WorkerServer, session_id: str) -> list[Any]:
    turns = server.sessions[session_id].session.conversation.turns
    return [t for t in turns if t.role == "tool"]


def result(call_id: str, output: Any, request_id: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "tool.result", "call_id": call_id, "output": output}
    if request_id is not None:
        message["id"] = request_id
    return message


async def run_loop(
    client: RawClient, prompt: str, outputs: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One response that calls tools; answer each call as it comes (by city or name).

    Returns (every message of the response, the calls).
    """
    start = len(client.seen)
    await client.send({"type": "response.create", "input": prompt})
    calls: list[dict[str, Any]] = []
    while True:
        message = await client.recv()
        if message["type"] == "response.tool_call":
            calls.append(message)
            key = message["arguments"].get("city", message["name"])
            await client.send(result(message["call_id"], outputs[key]))
        if message["type"] == "response.done":
            return client.seen[start:], calls


# -- the loop ------------------------------------------------------------------


async def test_one_call_full_loop(start_server: StartServer) -> None:
    """Call, result, continuation: one response, one done, the answer quotes the output."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS})
    before_call = await collect_until(client, "response.tool_call")
    call = before_call[-1]
    assert call["name"] == "get_weather"
    assert call["arguments"] == {"city": "Paris"}
    assert call["response_id"] == before_call[0]["response_id"]
    output = {"temp_c": 21, "sky": "clear"}
    await client.send(result(call["call_id"], output))
    rest = await collect_until(client, "response.done")
    accepted = of_type(rest, "tool.result.accepted")
    assert [(a["call_id"], a["duplicate"]) for a in accepted] == [(call["call_id"], False)]
    assert accepted[0]["seq"] < rest[-1]["seq"]
    done = rest[-1]
    assert done["status"] == "completed"
    assert done["response_id"] == call["response_id"]
    assert json.dumps(output) in text_of(rest)
    assert len(of_type(client.seen, "response.created")) == 1
    assert len(of_type(client.seen, "response.done")) == 1
    assert_gap_free(client.seen[1:])
    usage = done["usage"]
    assert usage["output_tokens_generated"] == usage["output_tokens_delivered"] > 0
    roles = [t.role for t in server.sessions[ready["session_id"]].session.conversation.turns]
    assert roles == ["user", "assistant", "tool", "assistant"]
    await client.close()


async def test_parallel_calls_one_continuation(start_server: StartServer) -> None:
    """Two calls in one round, both answered once the round is over: one continuation."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS_AND_LONDON})
    calls = await wait_for_calls(client, 2)
    assert [c["arguments"] for c in calls] == [{"city": "Paris"}, {"city": "London"}]
    assert calls[0]["call_id"] != calls[1]["call_id"]
    outputs = {"Paris": {"temp_c": 21}, "London": {"temp_c": 14, "rain": True}}
    for call in calls:
        await client.send(result(call["call_id"], outputs[call["arguments"]["city"]]))
    rest = await collect_until(client, "response.done")
    assert [m["duplicate"] for m in of_type(rest, "tool.result.accepted")] == [False, False]
    done = rest[-1]
    assert done["status"] == "completed"
    answer = text_of(rest)
    assert json.dumps(outputs["Paris"]) in answer
    assert json.dumps(outputs["London"]) in answer
    assert len(of_type(client.seen, "response.created")) == 1
    assert len(of_type(client.seen, "response.done")) == 1
    assert_gap_free(client.seen[1:])
    usage = done["usage"]
    assert usage["output_tokens_generated"] == usage["output_tokens_delivered"]
    # Both rounds count: every argument fragment and every text delta is at least a token.
    tokens_seen = len(of_type(client.seen, "response.tool_call.delta")) + len(
        of_type(client.seen, "response.text.delta")
    )
    assert usage["output_tokens_generated"] >= tokens_seen
    assert [t.tool_call_id for t in tool_turns(server, ready["session_id"])] == [
        c["call_id"] for c in calls
    ]
    await client.close()


async def test_result_while_the_round_still_streams(start_server: StartServer) -> None:
    """A client that runs each call at once: the first result arrives while the engine
    still writes the second call. Both results must reach the continuation."""
    # The second call's arguments take hundreds of decode steps: the first result is
    # applied long before they are complete.
    server = await start_server(decode_rate=50.0)
    client, ready = await open_session(server, tools=[WEATHER, LEDGER])
    outputs = {"Paris": {"temp_c": 21}, "fill_form": {"saved": 40}}
    messages, calls = await run_loop(client, PARIS + " Then call fill_form.", outputs)
    assert [c["name"] for c in calls] == ["get_weather", "fill_form"]
    first_accepted = of_type(messages, "tool.result.accepted")[0]
    assert first_accepted["call_id"] == calls[0]["call_id"]
    # The scenario this test is about really happened (checked, not assumed).
    assert first_accepted["seq"] < calls[1]["seq"]
    done = messages[-1]
    assert done["status"] == "completed"
    answer = text_of(messages)
    assert json.dumps(outputs["Paris"]) in answer
    assert json.dumps(outputs["fill_form"]) in answer
    turns = server.sessions[ready["session_id"]].session.conversation.turns
    assert [t.role for t in turns] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [t.tool_call_id for t in turns[2:4]] == [c["call_id"] for c in calls]
    await client.close()


async def test_provisional_deltas_grow_into_the_call(start_server: StartServer) -> None:
    """Each delta's arguments is a partial of the final; the deltas concatenate to them."""
    server = await start_server()
    client, _ = await open_session(server, tools=[WEATHER, STOCK])
    await client.send(
        {"type": "response.create", "input": "weather in Paris and London, and call lookup_stock"}
    )
    calls = await wait_for_calls(client, 3)
    deltas = of_type(client.seen, "response.tool_call.delta")
    for call in calls:
        mine = [d for d in deltas if d["call_id"] == call["call_id"]]
        assert len(mine) > 1, "arguments stream in several fragments"
        # Every delta of a call comes before the call.
        assert all(d["seq"] < call["seq"] for d in mine)
        assert all(d["provisional"] is True and d["name"] == call["name"] for d in mine)
        assert json.loads("".join(d["delta"] for d in mine)) == call["arguments"]
        previous: Any = None
        for delta in mine:
            assert consistent(delta["arguments"], call["arguments"]), delta
            assert consistent(previous, delta["arguments"]), (previous, delta)
            previous = delta["arguments"]
        assert mine[-1]["arguments"] == call["arguments"]
    stock = next(c for c in calls if c["name"] == "lookup_stock")
    jsonschema.validate(stock["arguments"], STOCK["parameters"])
    await client.close()


# -- results ---------------------------------------------------------------------


async def test_duplicate_result_is_applied_once(start_server: StartServer) -> None:
    """The same result twice: acknowledged twice (duplicate the second time), one tool turn."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS})
    call = (await collect_until(client, "response.tool_call"))[-1]
    await client.send(result(call["call_id"], {"temp_c": 21}))
    await client.send(result(call["call_id"], {"temp_c": -99}))
    await client.until("response.done")
    accepted = of_type(client.seen, "tool.result.accepted")
    if len(accepted) < 2:
        accepted.append(await client.until("tool.result.accepted"))
    assert [(a["call_id"], a["duplicate"]) for a in accepted] == [
        (call["call_id"], False),
        (call["call_id"], True),
    ]
    turns = tool_turns(server, ready["session_id"])
    assert [(t.tool_call_id, json.loads(t.text)) for t in turns] == [
        (call["call_id"], {"temp_c": 21})
    ]
    assert '"temp_c": -99' not in text_of(client.seen)
    assert len(of_type(client.seen, "response.done")) == 1
    await client.close()


async def test_unknown_call_is_refused_in_band(start_server: StartServer) -> None:
    """A result for a call the session never made: ``unknown_tool_call``, session goes on."""
    server = await start_server()
    client, _ = await open_session(server, tools=[WEATHER])
    await client.send(result("call_does_not_exist", 1, request_id="req-7"))
    error = await client.until("error")
    assert error["code"] == "unknown_tool_call"
    assert error["request_id"] == "req-7"
    assert "seq" in error
    messages, calls = await run_loop(client, PARIS, {"Paris": {"temp_c": 3}})
    assert len(calls) == 1
    assert messages[-1]["status"] == "completed"
    await client.close()


async def test_invalid_arguments_fail_the_response(start_server: StartServer) -> None:
    """Arguments that miss the schema never become a call; the response fails and says why."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS + " bad arguments"})
    messages = await collect_until(client, "response.done")
    done = messages[-1]
    assert (done["status"], done["reason"]) == ("failed", "invalid_tool_arguments")
    assert of_type(messages, "response.tool_call") == []
    deltas = of_type(messages, "response.tool_call.delta")
    assert deltas, "the arguments were shown as provisional deltas"
    call_id = deltas[0]["call_id"]
    assert done["error"]["call_id"] == call_id
    assert done["error"]["name"] == "get_weather"
    assert "schema" in done["error"]["message"]
    assert "dropped_tool_calls" not in done or call_id not in done["dropped_tool_calls"]
    # Never in the ledger: a result for it is unknown.
    assert await server.store.tool_calls(ready["session_id"]) == []
    await client.send(result(call_id, "anything", request_id="late"))
    error = await client.until("error")
    assert (error["code"], error["request_id"]) == ("unknown_tool_call", "late")
    # The session goes on.
    messages, _ = await run_loop(client, PARIS, {"Paris": "sunny"})
    assert messages[-1]["status"] == "completed"
    await client.close()


# -- interrupt and timeout ----------------------------------------------------------


async def test_interrupt_while_arguments_stream(start_server: StartServer) -> None:
    """Interrupt mid-arguments: the call is dropped (listed in done), never emitted, not in
    the ledger; a result for it is unknown."""
    server = await start_server(decode_rate=50.0)
    client, ready = await open_session(server, tools=[LEDGER])
    await client.send({"type": "response.create", "input": "call fill_form"})
    first = await client.until("response.tool_call.delta")
    await client.send({"type": "response.interrupt"})
    messages = await collect_until(client, "response.done")
    done = messages[-1]
    assert done["status"] == "interrupted"
    assert done["dropped_tool_calls"] == [first["call_id"]]
    assert of_type(client.seen, "response.tool_call") == []
    assert await server.store.tool_calls(ready["session_id"]) == []
    state = server.sessions[ready["session_id"]].session.tools.calls[first["call_id"]]
    assert state.state is CallState.DROPPED
    await client.send(result(first["call_id"], {}, request_id="r1"))
    error = await client.until("error")
    assert (error["code"], error["request_id"]) == ("unknown_tool_call", "r1")
    assert tool_turns(server, ready["session_id"]) == []
    assert_gap_free(client.seen[1:])
    await client.close()


async def test_interrupt_while_waiting_keeps_the_call(start_server: StartServer) -> None:
    """Interrupt after the call was emitted: the response ends, the call stays pending,
    and its later result is still applied and recorded as a tool turn."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS})
    call = (await collect_until(client, "response.tool_call"))[-1]
    await client.send({"type": "response.interrupt"})
    done = await client.until("response.done")
    assert done["status"] == "interrupted"
    assert call["call_id"] not in done.get("dropped_tool_calls", [])
    await client.send(result(call["call_id"], {"temp_c": 8}))
    accepted = await client.until("tool.result.accepted")
    assert (accepted["call_id"], accepted["duplicate"]) == (call["call_id"], False)
    session_id = ready["session_id"]
    await wait_until(lambda: len(tool_turns(server, session_id)) == 1)
    turn = tool_turns(server, session_id)[0]
    assert (turn.tool_call_id, json.loads(turn.text)) == (call["call_id"], {"temp_c": 8})
    # The call is in the history before its result (an assistant turn that names it).
    turns = server.sessions[session_id].session.conversation.turns
    index = turns.index(turn)
    assert any(c.call_id == call["call_id"] for c in turns[index - 1].tool_calls)
    # The interrupted response stays ended: the result starts no new response.
    await client.send({"type": "response.create", "input": "thanks"})
    created = await client.until("response.created")
    assert created["response_id"] != call["response_id"]
    await client.until("response.done")
    assert len(of_type(client.seen, "response.done")) == 2
    assert_gap_free(client.seen[1:])
    await client.close()


async def test_timeout_closes_the_call(start_server: StartServer) -> None:
    """No result in time: the call is closed, the response ends incomplete, a late
    result is refused with ``tool_call_closed``."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER], settings={"tool_timeout_ms": 300})
    assert ready["limits"]["tool_timeout_ms"] == 300
    await client.send({"type": "response.create", "input": PARIS})
    call = (await collect_until(client, "response.tool_call"))[-1]
    messages = await collect_until(client, "response.done")
    closed = of_type(messages, "response.tool_call.closed")
    assert [(c["call_id"], c["status"]) for c in closed] == [(call["call_id"], "timed_out")]
    assert closed[0]["response_id"] == call["response_id"]
    done = messages[-1]
    assert closed[0]["seq"] < done["seq"]
    assert (done["status"], done["reason"]) == ("incomplete", "tool_timeout")
    await client.send(result(call["call_id"], {"temp_c": 1}, request_id="too-late"))
    error = await client.until("error")
    assert (error["code"], error["request_id"]) == ("tool_call_closed", "too-late")
    assert tool_turns(server, ready["session_id"]) == []
    assert of_type(client.seen, "tool.result.accepted") == []
    await client.close()


async def test_timeout_closes_only_the_unanswered_call(start_server: StartServer) -> None:
    """Two calls, one answered: only the other is closed; its answered sibling stays applied."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER], settings={"tool_timeout_ms": 300})
    await client.send({"type": "response.create", "input": PARIS_AND_LONDON})
    paris, london = await wait_for_calls(client, 2)
    await client.send(result(paris["call_id"], {"temp_c": 21}))
    messages = await collect_until(client, "response.done")
    closed = of_type(client.seen, "response.tool_call.closed")
    assert [c["call_id"] for c in closed] == [london["call_id"]]
    done = messages[-1]
    assert (done["status"], done["reason"]) == ("incomplete", "tool_timeout")
    assert [t.tool_call_id for t in tool_turns(server, ready["session_id"])] == [paris["call_id"]]
    await client.send(result(paris["call_id"], {"temp_c": 21}))
    assert (await client.until("tool.result.accepted"))["duplicate"] is True
    await client.send(result(london["call_id"], {"temp_c": 9}, request_id="late"))
    error = await client.until("error")
    assert (error["code"], error["request_id"]) == ("tool_call_closed", "late")
    await client.close()


async def test_cancel_while_arguments_stream(start_server: StartServer) -> None:
    """``response.cancel`` mid-arguments drops the call like an interrupt does."""
    server = await start_server(decode_rate=50.0)
    client, ready = await open_session(server, tools=[LEDGER])
    await client.send({"type": "response.create", "input": "call fill_form"})
    first = await client.until("response.tool_call.delta")
    await client.send({"type": "response.cancel"})
    done = await client.until("response.done")
    assert done["status"] == "cancelled"
    assert done["dropped_tool_calls"] == [first["call_id"]]
    assert of_type(client.seen, "response.tool_call") == []
    assert await server.store.tool_calls(ready["session_id"]) == []
    await client.close()


async def test_tool_error_reaches_the_model(start_server: StartServer) -> None:
    """A result with ``error`` instead of an output: recorded and quoted as an error."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS})
    call = (await collect_until(client, "response.tool_call"))[-1]
    await client.send({"type": "tool.result", "call_id": call["call_id"], "error": "no network"})
    messages = await collect_until(client, "response.done")
    assert messages[-1]["status"] == "completed"
    assert '{"error": "no network"}' in text_of(messages)
    (turn,) = tool_turns(server, ready["session_id"])
    assert json.loads(turn.text) == {"error": "no network"}
    await client.close()


async def test_result_after_interrupt_can_be_answered(start_server: StartServer) -> None:
    """After an interrupted tool response and its late result, ``response.create`` (no new
    input) answers from the result."""
    server = await start_server()
    client, _ = await open_session(server, tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS})
    call = (await collect_until(client, "response.tool_call"))[-1]
    await client.send({"type": "response.interrupt"})
    await client.until("response.done")
    await client.send(result(call["call_id"], {"temp_c": 8}))
    await client.until("tool.result.accepted")
    await client.send({"type": "response.create", "id": "answer-it"})
    start = len(client.seen)
    while client.seen[-1]["type"] not in ("response.done", "error"):
        await client.recv()
    messages = client.seen[start:]
    assert of_type(messages, "error") == []
    assert messages[-1]["status"] == "completed"
    assert '{"temp_c": 8}' in text_of(messages)
    await client.close()


# -- reconnect -----------------------------------------------------------------------


async def test_reconnect_while_arguments_stream(start_server: StartServer) -> None:
    """Cut the socket after the first delta; the resumed connection gets the rest of the
    deltas and the call, each once, in order; the loop then completes."""
    server = await start_server(decode_rate=50.0)
    client, ready = await open_session(server, tools=[LEDGER])
    await client.send({"type": "response.create", "input": "call fill_form"})
    first = await client.until("response.tool_call.delta")
    client.abort()
    last_seq = first["seq"]
    again = await RawClient.connect(url_of(server))
    await again.resume(ready, last_seq)
    resumed = await again.until("session.ready")
    assert resumed["resumed"] is True
    call = await again.until("response.tool_call")
    events = [m for m in client.seen + again.seen if "seq" in m]
    assert_gap_free(events)
    deltas = [
        d for d in of_type(events, "response.tool_call.delta") if d["call_id"] == first["call_id"]
    ]
    assert call["call_id"] == first["call_id"]
    assert json.loads("".join(d["delta"] for d in deltas)) == call["arguments"]
    jsonschema.validate(call["arguments"], LEDGER["parameters"])
    await again.send(result(call["call_id"], {"saved": True}))
    done = await again.until("response.done")
    assert done["status"] == "completed"
    assert '{"saved": true}' in text_of(again.seen)
    assert_gap_free([m for m in client.seen + again.seen if "seq" in m])
    await again.close()


async def test_reconnect_between_call_and_result(start_server: StartServer) -> None:
    """Cut after the call: ``session.ready`` lists it as pending; the result sent on the new
    connection completes the loop; re-sent after another reconnect it is a duplicate."""
    server = await start_server()
    client, ready = await open_session(server, tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS})
    call = (await collect_until(client, "response.tool_call"))[-1]
    client.abort()
    second = await RawClient.connect(url_of(server))
    await second.resume(ready, call["seq"])
    resumed = await second.until("session.ready")
    assert resumed["pending_tool_calls"] == [
        {
            "response_id": call["response_id"],
            "call_id": call["call_id"],
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        }
    ]
    await second.send(result(call["call_id"], {"temp_c": 17}))
    done = await second.until("response.done")
    assert done["status"] == "completed"
    assert '{"temp_c": 17}' in text_of(second.seen)
    accepted = of_type(second.seen, "tool.result.accepted")
    assert [a["duplicate"] for a in accepted] == [False]
    second.abort()
    third = await RawClient.connect(url_of(server))
    await third.resume(ready, done["seq"])
    again = await third.until("session.ready")
    assert "pending_tool_calls" not in again
    await third.send(result(call["call_id"], {"temp_c": 17}))
    duplicate = await third.until("tool.result.accepted")
    assert (duplicate["call_id"], duplicate["duplicate"]) == (call["call_id"], True)
    assert len(tool_turns(server, ready["session_id"])) == 1
    events = [m for m in client.seen + second.seen + third.seen if "seq" in m]
    assert_gap_free(events)
    assert len(of_type(events, "response.done")) == 1
    await third.close()


# -- tools of the session -------------------------------------------------------------


async def test_session_update_changes_the_tools(start_server: StartServer) -> None:
    """``session.update`` replaces the tools: a call to a newly added tool works."""
    server = await start_server()
    client, _ = await open_session(server, tools=[WEATHER])
    await client.send({"type": "session.update", "tools": [WEATHER, STOCK]})
    updated = await client.until("session.updated")
    assert updated["tools"] == ["get_weather", "lookup_stock"]
    messages, calls = await run_loop(client, "call lookup_stock", {"lookup_stock": {"px": 101.5}})
    assert [c["name"] for c in calls] == ["lookup_stock"]
    jsonschema.validate(calls[0]["arguments"], STOCK["parameters"])
    assert messages[-1]["status"] == "completed"
    assert '{"px": 101.5}' in text_of(messages)
    # And a tool that was removed is no longer called.
    await client.send({"type": "session.update", "tools": [STOCK]})
    assert (await client.until("session.updated"))["tools"] == ["lookup_stock"]
    await client.send({"type": "response.create", "input": PARIS})
    messages = await collect_until(client, "response.done")
    assert of_type(messages, "response.tool_call.delta") == []
    assert messages[-1]["status"] == "completed"
    await client.close()


BAD_TOOL: dict[str, Any] = {
    "name": "broken",
    "parameters": {"type": "object", "properties": {"x": {"type": "no-such-type"}}},
}


async def test_invalid_schema_at_start(start_server: StartServer) -> None:
    """A tool whose parameters are not a JSON Schema: ``invalid_schema``, no session."""
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    await client.send({"type": "session.start", "tools": [WEATHER, BAD_TOOL], "id": "s1"})
    error = await client.until("error")
    assert (error["code"], error["request_id"]) == ("invalid_schema", "s1")
    assert "broken" in error["message"]
    assert not server.sessions
    # The connection stays usable: a corrected start works.
    ready = await client.start(tools=[WEATHER])
    assert ready["session_id"] in server.sessions
    await client.close()


async def test_invalid_schema_at_update_changes_nothing(start_server: StartServer) -> None:
    """``session.update`` with a bad schema: ``invalid_schema``, the old tools stay."""
    server = await start_server()
    client, _ = await open_session(server, tools=[WEATHER])
    await client.send({"type": "session.update", "tools": [STOCK, BAD_TOOL], "id": "u1"})
    error = await client.until("error")
    assert (error["code"], error["request_id"]) == ("invalid_schema", "u1")
    assert of_type(client.seen, "session.updated") == []
    messages, calls = await run_loop(client, PARIS, {"Paris": {"temp_c": 5}})
    assert [c["name"] for c in calls] == ["get_weather"]
    assert messages[-1]["status"] == "completed"
    await client.close()


# -- encodings ------------------------------------------------------------------------


async def test_full_loop_over_msgpack(start_server: StartServer) -> None:
    """The same loop with binary msgpack frames."""
    server = await start_server()
    client = await RawClient.connect(url_of(server), subprotocol=MSGPACK_SUBPROTOCOL)
    assert client.ws.subprotocol == MSGPACK_SUBPROTOCOL
    await client.start(tools=[WEATHER])
    await client.send({"type": "response.create", "input": PARIS_AND_LONDON})
    calls = await wait_for_calls(client, 2)
    assert [c["arguments"] for c in calls] == [{"city": "Paris"}, {"city": "London"}]
    outputs = {"Paris": {"temp_c": 21}, "London": {"temp_c": 14, "note": "bring an umbrella"}}
    for call in calls:
        await client.send(result(call["call_id"], outputs[call["arguments"]["city"]]))
    messages = await collect_until(client, "response.done")
    done = messages[-1]
    assert done["status"] == "completed"
    answer = text_of(messages)
    assert json.dumps(outputs["Paris"]) in answer
    assert json.dumps(outputs["London"]) in answer
    assert [a["duplicate"] for a in of_type(messages, "tool.result.accepted")] == [False, False]
    assert_gap_free(client.seen[1:])
    await client.close()


# -- hostile schemas ----------------------------------------------------------------


async def start_answer(client: RawClient, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """``session.start`` with ``tools``: the ``error`` or ``session.ready`` it gets."""
    await client.send({"type": "session.start", "tools": tools, "id": "s1"})
    while True:
        message = await client.recv()
        if message["type"] in ("error", "session.ready"):
            return message


async def test_tool_schema_references_fetch_nothing(
    start_server: StartServer, tmp_path: Path
) -> None:
    """A tool whose parameters ``$ref`` a URL or a file: ``invalid_schema`` at once; the
    worker fetches nothing and reads nothing, even when the tool is called (before, the
    call's validation fetched the schema and its content came back in the error)."""
    server = await start_server()
    with schema_bait(tmp_path) as bait:
        for ref in (bait.url, bait.file_uri):
            tool = {
                "name": "fetcher",
                "parameters": {"type": "object", "properties": {"x": {"$ref": ref}}},
            }
            client = await RawClient.connect(url_of(server))
            answer = await start_answer(client, [tool])
            if answer["type"] == "session.ready":  # what the worker did before the fix
                await client.send({"type": "response.create", "input": "call fetcher"})
                await client.until("response.done", timeout=15.0)
            assert not bait.leaked(client.seen), client.seen
            assert bait.requests == [], "the worker fetched a schema from the network"
            assert (answer["type"], answer.get("code")) == ("error", "invalid_schema")
            assert "fetcher" in answer["message"]
            await client.close()


async def test_deeply_nested_tool_schema_is_refused(start_server: StartServer) -> None:
    """Parameters nested 150 levels: refused in-band (before: ``internal_error`` from a
    RecursionError); the connection stays usable."""
    parameters: dict[str, Any] = {"type": "string"}
    for _ in range(150):
        parameters = {"type": "object", "properties": {"a": parameters}}
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    answer = await start_answer(client, [{"name": "deep", "parameters": parameters}])
    assert answer["type"] == "error"
    # The bound on a whole message's nesting may answer first (invalid_json): as good.
    assert answer["code"] in ("invalid_schema", "invalid_json"), answer
    if answer["code"] == "invalid_schema":
        assert "nests deeper than" in answer["message"]
    ready = await client.start(tools=[WEATHER])
    assert ready["session_id"] in server.sessions
    await client.close()


async def test_tools_too_large_together_are_refused(start_server: StartServer) -> None:
    """Each schema within its limit, all of them together past theirs: ``invalid_schema``."""
    parameters = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(600)},
    }
    tools = [{"name": f"tool_{i}", "parameters": parameters} for i in range(10)]
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    answer = await start_answer(client, tools)
    assert (answer["type"], answer.get("code")) == ("error", "invalid_schema"), answer
    assert "together" in answer["message"]
    await client.close()

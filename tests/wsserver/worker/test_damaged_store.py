"""Real workers over a damaged Redis store: a session's record, its tool-call ledger,
or its keys' types damaged by hand (another version's layout, a half write, a mistake).

Each gets a clear in-band answer and no traceback; nothing is claimed that cannot be
restored; the session's owner still serves it from memory; and one damaged session's
keys never hold up the other sessions' writes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as redis

from tests.processes import WorkerProcess, eventually
from tests.wsserver.client.stand_in import run_cli
from tests.wsserver.tool_specs import WEATHER_TOOL
from tests.wsserver.wire import RawClient
from tests.wsserver.worker.conftest import FLAGS
from tests.wsserver.worker.damaged_store import answered_on, stored_epoch
from wsserver.store.base import StoreLimits
from wsserver.store.redis_layout import session_keys, usage_key
from wsserver.store.selector import open_store


async def _redis_do(redis_url: str, *command: Any) -> Any:
    client = redis.Redis.from_url(redis_url)
    try:
        return await client.execute_command(*command)
    finally:
        await client.aclose()


def _no_traceback(*workers: WorkerProcess) -> None:
    for worker in workers:
        assert "Traceback" not in "".join(worker.lines), worker.name


async def _refusal(url: str, ready: dict[str, Any], last_seq: int) -> dict[str, Any]:
    """The error a resume of ``ready``'s session gets at ``url``, read to the close."""
    client = await RawClient.connect(url)
    await client.resume(ready, last_seq)
    error = await client.until("error")
    await client.closed_code()
    return error


async def _resumed_locally(a: WorkerProcess, ready: dict[str, Any], seqs: list[int]) -> None:
    """The owner's own copy resumes the session whatever the store holds."""
    client = await RawClient.connect(a.url)
    await client.resume(ready, seqs[-1])
    assert (await client.until("session.ready"))["resumed"] is True
    await client.send({"type": "response.create", "input": "still there?"})
    assert (await client.until("response.done"))["status"] == "completed"
    await client.close()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("created_at", "yesterday"),
        ("token_hash", b"\xff\xfe"),
        ("principal", b"\xff"),
        # Nested deeper than json.loads recurses: a RecursionError, read as damage.
        ("conversation", "[" * 100_000 + "]" * 100_000),
        ("stream", '{"last_seq":' + "[" * 100_000 + "]" * 100_000 + "}"),
    ],
)
async def test_a_damaged_record_is_unknown_elsewhere_and_served_by_its_owner(
    field: str, value: Any, workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    ready, seqs = await answered_on(a.url, redis_url)
    meta, *_ = session_keys(ready["session_id"])
    await _redis_do(redis_url, "HSET", meta, field, value)
    # Whose it is cannot be read either: answered like a session that does not exist.
    error = await _refusal(b.url, ready, seqs[-1])
    assert (error["code"], error["message"]) == ("unknown_session", "no such session")
    assert b.stats()["store"]["takeovers"] == 0
    await _resumed_locally(a, ready, seqs)
    assert any("stored record of" in line and "is unreadable" in line for line in b.lines)
    _no_traceback(a, b)


async def test_a_damaged_epoch_is_not_its_owners_any_more(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    ready, seqs = await answered_on(a.url, redis_url)
    meta, *_ = session_keys(ready["session_id"])
    await _redis_do(redis_url, "HSET", meta, "epoch", "abc")
    # The owner's next renewal finds an epoch that is not its own: it lets the session go.
    await eventually(lambda: a.stats()["sessions"] == 0, timeout=15)
    for worker in (a, b):
        error = await _refusal(worker.url, ready, seqs[-1])
        assert error["code"] == "unknown_session", worker.name
    _no_traceback(a, b)


async def test_a_record_key_of_another_type_is_unknown_elsewhere_not_unavailable(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    ready, seqs = await answered_on(a.url, redis_url)
    meta, *_ = session_keys(ready["session_id"])
    await _redis_do(redis_url, "DEL", meta)
    await _redis_do(redis_url, "SET", meta, "oops")
    for _ in range(2):  # the same answer again: a retry gets no further
        error = await _refusal(b.url, ready, seqs[-1])
        assert (error["code"], error["message"]) == ("unknown_session", "no such session")
    assert b.stats()["store"]["takeovers"] == 0
    _no_traceback(a, b)


async def test_a_log_key_of_another_type_is_refused_with_the_snapshot_before_the_claim(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    ready, seqs = await answered_on(a.url, redis_url)
    session_id = ready["session_id"]
    _meta, log, *_ = session_keys(session_id)
    await _redis_do(redis_url, "DEL", log)
    await _redis_do(redis_url, "SET", log, "oops")
    epoch = await stored_epoch(redis_url, session_id)
    error = await _refusal(b.url, ready, seqs[-1])
    assert error["code"] == "replay_unavailable"
    assert error["message"] == "the stored replay log is unreadable"
    # What the conversation holds is still readable: the client can start from it.
    assert error["snapshot"]["conversation"][0] == {"role": "user", "text": "hello"}
    assert await stored_epoch(redis_url, session_id) == epoch
    assert b.stats()["store"]["takeovers"] == 0
    assert any("stored replay log of" in line for line in b.lines)
    _no_traceback(a, b)


@pytest.mark.parametrize(
    "conversation",
    ["{}", '{"limits": {}}', '{"turns": [["user"]], "limits": {"bogus": 1}}'],
)
async def test_a_snapshot_that_does_not_restore_is_refused_before_the_claim(
    conversation: str, workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    ready, seqs = await answered_on(a.url, redis_url)
    session_id = ready["session_id"]
    meta, *_ = session_keys(session_id)
    await _redis_do(redis_url, "HSET", meta, "conversation", conversation)
    epoch = await stored_epoch(redis_url, session_id)
    for _ in range(2):  # a retry does not claim it either
        error = await _refusal(b.url, ready, seqs[len(seqs) // 2])
        assert error["code"] == "replay_unavailable"
        assert error["message"] == "the stored session is unreadable"
        assert "snapshot" not in error
    assert await stored_epoch(redis_url, session_id) == epoch
    assert b.stats()["store"]["takeovers"] == 0
    await _resumed_locally(a, ready, seqs)
    _no_traceback(a, b)


async def _session_with_a_recorded_call(
    worker: WorkerProcess, redis_url: str
) -> tuple[RawClient, dict[str, Any], dict[str, Any]]:
    """A session at ``worker`` with one tool call, once it is in the stored ledger."""
    client = await RawClient.connect(worker.url)
    ready = await client.start(tools=[WEATHER_TOOL])
    await client.send({"type": "response.create", "input": "what is the weather in Paris?"})
    call = await client.until("response.tool_call")
    store = open_store(redis_url, StoreLimits())
    try:
        for _ in range(500):  # the ledger is written just after the call is queued
            if call["call_id"] in [c.call_id for c in await store.tool_calls(ready["session_id"])]:
                break
            await asyncio.sleep(0.02)
    finally:
        await store.close()
    return client, ready, call


async def _call_with_a_damaged_ledger(
    worker: WorkerProcess, redis_url: str
) -> tuple[RawClient, dict[str, Any], dict[str, Any]]:
    """A session with one recorded tool call, then its ledger key turned into a string."""
    client, ready, call = await _session_with_a_recorded_call(worker, redis_url)
    *_, tools = session_keys(ready["session_id"])
    await _redis_do(redis_url, "DEL", tools)
    await _redis_do(redis_url, "SET", tools, "oops")
    return client, ready, call


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("c:{id}", "[1,{not json"),
        ("c:{id}", '[1,{"call_id":"x"}]'),
        ("r:{id}", "{bad"),
        # Nested deeper than json.loads recurses: a RecursionError, not a value error.
        ("c:{id}", "[1," + "[" * 100_000 + "]" * 100_000 + "]"),
        # Reads as JSON, but a field is not of its type.
        ("c:{id}", '[1,{"call_id":"@ID@","response_id":"@RESPONSE@","name":5,"arguments":"{}"}]'),
        ("c:{id}", '[1,{"call_id":"@ID@","response_id":null,"name":"w","arguments":"{}"}]'),
        ("r:{id}", '{"status":"completed","output":["8C"],"error":null}'),
        # Arguments that read as text, but nest deeper than the parser recurses.
        (
            "c:{id}",
            '[1,{"call_id":"@ID@","response_id":"@RESPONSE@","name":"get_weather","arguments":"'
            + "[" * 100_000
            + "]" * 100_000
            + '"}]',
        ),
    ],
)
async def test_a_damaged_tool_call_is_left_out_and_the_takeover_goes_on(
    field: str, value: str, workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    first, ready, call = await _session_with_a_recorded_call(a, redis_url)
    *_, tools = session_keys(ready["session_id"])
    if field.startswith("r:"):
        await first.send({"type": "tool.result", "call_id": call["call_id"], "output": "8C"})
        await first.until("tool.result.accepted")
    first.abort()
    value = value.replace("@ID@", call["call_id"]).replace("@RESPONSE@", call["response_id"])
    await _redis_do(redis_url, "HSET", tools, field.format(id=call["call_id"]), value)
    second = await RawClient.connect(b.url)
    await second.resume(ready, call["seq"])
    resumed = await second.until("session.ready")
    assert resumed["resumed"] is True
    assert resumed.get("pending_tool_calls", []) == []  # the call did not read back
    # The response lost with A still ends, once, and the session goes on at B.
    done = await second.until("response.done")
    assert (done["response_id"], done["status"]) == (call["response_id"], "failed")
    await second.send({"type": "response.create", "input": "hello again"})
    assert (await second.until("response.done"))["status"] == "completed"
    await second.close()
    assert any("left out" in line for line in b.lines)
    _no_traceback(a, b)


async def test_one_damaged_session_does_not_hold_up_the_others_writes(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, _b = workers
    damaged = await RawClient.connect(a.url)
    damaged_ready = await damaged.start()
    # Its usage ledger is a string: every write of its usage fails on its keys.
    await _redis_do(redis_url, "SET", usage_key(damaged_ready["session_id"]), "oops")
    healthy = await RawClient.connect(a.url)
    healthy_ready = await healthy.start()
    await damaged.send({"type": "response.create", "input": "hello"})
    await healthy.send({"type": "response.create", "input": "hello"})
    await damaged.until("response.done")
    done = await healthy.until("response.done")
    await eventually(
        lambda: any("the store refused session" in line for line in a.lines), timeout=10
    )
    # The healthy session's whole answer is in the store, and the store is up.
    store = open_store(redis_url, StoreLimits())
    try:
        for _ in range(250):
            stored = await store.read_log(healthy_ready["session_id"], 0)
            if stored.events and stored.events[-1][0] == done["seq"]:
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the healthy session's writes never reached the store")
    finally:
        await store.close()
    assert a.stats()["store"]["up"] is True
    refused = [line for line in a.lines if "the store refused session" in line]
    assert all(damaged_ready["session_id"] in line for line in refused)
    # Its ledger reads as damaged, not as a store that is down (which asking again fixes).
    session_id = damaged_ready["session_id"]
    assert a.get(f"/usage/{session_id}") == (
        500,
        {"error": "the stored usage ledger is unreadable"},
    )
    assert a.get(f"/usage/{healthy_ready['session_id']}")[0] == 200
    for source in (("--store", redis_url), ("--url", a.http)):
        code, output = await run_cli("usage", session_id, *source)
        assert code == 1, output
        assert "unreadable" in output and "Traceback" not in output, output
    # Once the damage is gone, its writes land at the next retry.
    await _redis_do(redis_url, "DEL", usage_key(damaged_ready["session_id"]))
    store = open_store(redis_url, StoreLimits())
    try:
        for _ in range(300):
            if await store.usage(damaged_ready["session_id"]):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the damaged session's writes never landed")
    finally:
        await store.close()
    await damaged.close()
    await healthy.close()
    _no_traceback(a)


WRONG_TYPED_USAGE = [
    '{"response_id":"resp_x","status":"completed","reason":null,"usage":{"input_tokens":"5"}}',
    '{"response_id":null,"status":"completed","reason":null,"usage":{}}',
    '{"response_id":"resp_x","status":["completed"],"reason":null,"usage":{}}',
    '{"response_id":"resp_x","status":"completed","reason":7,"usage":{}}',
    '{"response_id":"resp_x","status":"completed","reason":null,"usage":{"bogus":1}}',
    '{"response_id":"resp_x","status":"completed","reason":null,"usage":{"input_tokens":-3}}',
    '{"response_id":"resp_x","status":"completed","reason":null,"usage":[1,2]}',
    '{"usage":' + "[" * 100_000 + "]" * 100_000 + "}",
    # Parses, but the report's sum of it would have more digits than Python prints.
    '{"response_id":"resp_x","status":"completed","reason":null,"usage":{"input_tokens":'
    + "9" * 4300
    + "}}",
]
"""Usage entries that read as JSON but are not usage entries (each a field of another type)."""


async def test_a_usage_entry_of_wrong_types_is_left_out_of_the_report(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, _b = workers
    ready, _seqs = await answered_on(a.url, redis_url)
    session_id = ready["session_id"]
    await eventually(lambda: len(a.get(f"/usage/{session_id}")[1]["responses"]) == 1, timeout=10)
    status, before = a.get(f"/usage/{session_id}")
    await _redis_do(redis_url, "RPUSH", usage_key(session_id), *WRONG_TYPED_USAGE)
    # The readable entry still counts; each damaged one is left out (and logged).
    assert a.get(f"/usage/{session_id}") == (status, before)
    for source in (("--store", redis_url), ("--url", a.http)):
        code, output = await run_cli("usage", session_id, *source)
        assert code == 0, output
        assert before["responses"][0]["response_id"] in output and "resp_x" not in output, output
    assert sum("an entry left out" in line for line in a.lines) >= len(WRONG_TYPED_USAGE)
    _no_traceback(a)


async def test_a_tool_ledger_key_of_another_type_refuses_results_for_good_not_for_now(
    workers: tuple[WorkerProcess, WorkerProcess], redis_url: str
) -> None:
    a, b = workers
    first, ready, call = await _call_with_a_damaged_ledger(a, redis_url)
    # Not "store unavailable: resend later": resending gets the same answer.
    for _ in range(2):
        await first.send({"type": "tool.result", "call_id": call["call_id"], "output": "8C"})
        error = await first.until("error")
        assert error["code"] == "internal_error", error
        assert "tool-call ledger is unreadable" in error["message"], error
    first.abort()
    # A takeover adopts none of its calls and goes on.
    second = await RawClient.connect(b.url)
    await second.resume(ready, call["seq"])
    resumed = await second.until("session.ready")
    assert resumed["resumed"] is True
    assert resumed.get("pending_tool_calls", []) == []
    done = await second.until("response.done")
    assert (done["response_id"], done["status"]) == (call["response_id"], "failed")
    await second.send({"type": "response.create", "input": "hello again"})
    assert (await second.until("response.done"))["status"] == "completed"
    await second.close()
    assert any("unreadable at takeover" in line for line in b.lines)
    _no_traceback(a, b)


async def test_a_tool_call_whose_ledger_key_is_of_another_type_still_times_out(
    redis_url: str,
) -> None:
    worker = WorkerProcess("--store", redis_url, *FLAGS, "--tool-timeout", "0.5", name="t")
    worker.start()
    try:
        client, _ready, call = await _call_with_a_damaged_ledger(worker, redis_url)
        # Closing the call fails on its key: the response still ends, as timed out.
        done = await client.until("response.done")
        assert done["response_id"] == call["response_id"], done
        assert (done["status"], done["reason"]) == ("incomplete", "tool_timeout"), done
        await client.send({"type": "response.create", "input": "hello again"})
        assert (await client.until("response.done"))["status"] == "completed"
        await client.close()
        assert any("closing tool call" in line for line in worker.lines)
        _no_traceback(worker)
    finally:
        worker.stop()

"""The four behaviours of a streaming server, over real sockets on loopback."""

from __future__ import annotations

import asyncio

import pytest

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.relay import ChoppingRelay
from tests.wsserver.wire import RawClient, text_of, wait_until
from wsserver.client.session_client import SessionClient
from wsserver.engine.simulated import SimulatedEngine
from wsserver.store.memory import MemorySessionStore
from wsserver.worker.server import WorkerServer

PROMPT = "tell me about websockets"


async def _reference_text(server: WorkerServer, prompt: str = PROMPT) -> str:
    """The uninterrupted answer to ``prompt`` (the simulated engine is deterministic)."""
    async with SessionClient(url_of(server)) as client:
        result = await client.ask(prompt)
    assert result.status == "completed"
    return result.text


def _generated(server: WorkerServer, session_id: str, response_id: str = "resp_1") -> int:
    engine = server.engine
    assert isinstance(engine, SimulatedEngine)
    return engine.generated_by_request[f"{session_id}/{response_id}"]


@pytest.mark.both_engines
async def test_happy_path_through_a_relay_that_chops_the_byte_stream(
    start_server: StartServer,
) -> None:
    server = await start_server(answer_tokens=150)
    relay = ChoppingRelay(server.port, max_piece=5)
    port = await relay.start()
    try:
        for encoding in ("json", "msgpack"):
            async with SessionClient(f"ws://127.0.0.1:{port}", encoding=encoding) as client:
                result = await client.ask(PROMPT)
            assert result.status == "completed"
            assert result.usage["output_tokens_delivered"] == 150
            deltas = [e for e in result.events if e["type"] == "response.text.delta"]
            seqs = [e["seq"] for e in result.events if "seq" in e]
            assert seqs == list(range(1, len(seqs) + 1))
            assert len(deltas) >= 1
            assert result.text == await _reference_text(server)
        assert relay.pieces > 1000
    finally:
        await relay.stop()


async def test_killed_connection_resumes_with_exact_text_and_no_regeneration(
    start_server: StartServer,
) -> None:
    server = await start_server(answer_tokens=120, decode_rate=100)
    expected = await _reference_text(server)
    async with SessionClient(url_of(server)) as client:
        await client.create_response(PROMPT)
        seen: list[dict[str, object]] = []
        while True:
            event = await client.next_event(timeout=10)
            seen.append(event)
            if event["type"] == "response.text.delta" and len(seen) == 20:
                client.drop_connection()
            if event["type"] == "response.done":
                break
        session_id = client.session_id
        assert client.reconnects >= 1
    assert session_id is not None
    seqs = [int(e["seq"]) for e in seen if "seq" in e]  # type: ignore[call-overload]
    assert seqs == list(range(1, len(seqs) + 1)), "a seq was lost or doubled"
    assert text_of(seen) == expected  # type: ignore[arg-type]
    done = seen[-1]
    assert done["status"] == "completed"
    # The engine generated each token exactly once: no restart on resume.
    assert _generated(server, session_id) == 120
    assert done["usage"] == {
        "input_tokens": done["usage"]["input_tokens"],  # type: ignore[index]
        "output_tokens_generated": 120,
        "output_tokens_delivered": 120,
        "output_tokens_acknowledged": done["usage"]["output_tokens_acknowledged"],  # type: ignore[index]
    }


async def test_interrupt_after_three_tokens_stops_the_engine_within_one_step(
    start_server: StartServer,
) -> None:
    # 10 tokens/s: one decode step is 100 ms, far longer than a loopback round trip.
    server = await start_server(answer_tokens=500, decode_rate=10)
    client = await RawClient.connect(url_of(server))
    ready = await client.start()
    session_id = ready["session_id"]
    await client.send({"type": "response.create", "input": PROMPT})
    received: list[dict[str, object]] = []
    while len([m for m in received if m["type"] == "response.text.delta"]) < 3:
        received.append(await client.recv())
    await client.send({"type": "response.interrupt"})
    while received[-1]["type"] != "response.done":
        received.append(await client.recv())
    done = received[-1]
    assert done["status"] == "interrupted"
    usage = done["usage"]
    assert isinstance(usage, dict)
    assert usage["output_tokens_generated"] <= 4
    assert _generated(server, session_id) == usage["output_tokens_generated"]
    await asyncio.sleep(0.3)  # three decode steps: nothing more may be generated
    assert _generated(server, session_id) == usage["output_tokens_generated"]
    delivered_text = text_of(received)  # type: ignore[arg-type]
    runtime = server.sessions[session_id]
    assert runtime.session.history()[-1].role == "assistant"
    assert runtime.session.history()[-1].text == delivered_text
    # The next turn is answered from a history holding only the delivered text.
    await client.send({"type": "response.create", "input": "go on"})
    created = await client.until("response.created")
    assert created["response_id"] == "resp_2"
    prompt_texts = [t.text for t in runtime.session.history()]
    assert prompt_texts[-2:] == [delivered_text, "go on"]
    await client.close()


async def test_interrupt_keeps_only_what_the_client_rendered(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=500, decode_rate=50)
    client = await RawClient.connect(url_of(server))
    session_id = (await client.start())["session_id"]
    await client.send({"type": "response.create", "input": PROMPT})
    deltas: list[dict[str, object]] = []
    while len(deltas) < 4:
        message = await client.recv()
        if message["type"] == "response.text.delta":
            deltas.append(message)
    rendered = text_of(deltas[:2])  # type: ignore[arg-type]
    await client.send({"type": "response.interrupt", "rendered_chars": len(rendered)})
    assert (await client.until("response.done"))["status"] == "interrupted"
    assert server.sessions[session_id].session.history()[-1].text == rendered
    await client.close()


async def test_abrupt_drop_without_resume_stops_the_engine_after_the_grace_period(
    start_server: StartServer,
) -> None:
    server = await start_server(
        answer_tokens=100_000, max_output_tokens=5000, decode_rate=100, grace_period=0.5
    )
    client = await RawClient.connect(url_of(server))
    session_id = (await client.start())["session_id"]
    await client.send({"type": "response.create", "input": PROMPT})
    await client.until("response.text.delta")
    client.abort()
    engine = server.engine
    assert isinstance(engine, SimulatedEngine)
    await wait_until(lambda: engine.stats()["running"] == 0)
    stopped_at = _generated(server, session_id)
    assert stopped_at < 1000, "well short of max tokens"
    await asyncio.sleep(0.2)
    assert _generated(server, session_id) == stopped_at
    store = server.store
    assert isinstance(store, MemorySessionStore)
    entries = []
    for _ in range(200):
        entries = await store.usage(session_id)
        if entries:
            break
        await asyncio.sleep(0.01)
    (entry,) = entries
    assert (entry.status, entry.reason) == ("incomplete", "client_gone")
    assert entry.usage.output_tokens_generated == stopped_at


async def test_explicit_close_aborts_at_once_and_ends_the_session(
    start_server: StartServer,
) -> None:
    server = await start_server(answer_tokens=100_000, decode_rate=100, grace_period=60)
    client = await RawClient.connect(url_of(server))
    session_id = (await client.start())["session_id"]
    runtime = server.sessions[session_id]
    await client.send({"type": "response.create", "input": PROMPT})
    await client.until("response.text.delta")
    await client.close()
    await wait_until(lambda: server.engine.stats()["running"] == 0)
    stopped_at = _generated(server, session_id)
    await asyncio.sleep(0.1)
    assert _generated(server, session_id) == stopped_at
    last = runtime.session.last_response
    assert last is not None
    assert (last.status, last.reason) == ("cancelled", "client_closed")
    assert session_id not in server.sessions


async def test_close_with_another_code_aborts_but_stays_resumable(
    start_server: StartServer,
) -> None:
    server = await start_server(answer_tokens=100_000, decode_rate=100, grace_period=60)
    client = await RawClient.connect(url_of(server))
    ready = await client.start()
    await client.send({"type": "response.create", "input": PROMPT})
    await client.until("response.text.delta")
    await client.ws.close(4001, "done here")
    await wait_until(lambda: server.engine.stats()["running"] == 0)
    again = await RawClient.connect(url_of(server))
    await again.resume(ready, 0)
    done = await again.until("response.done")
    assert (done["status"], done["reason"]) == ("cancelled", "client_closed")
    await again.close()


async def test_a_page_unload_close_1001_keeps_the_answer_running_for_the_resume(
    start_server: StartServer,
) -> None:
    """A browser closes with 1001 when its page unloads or reloads: a drop, not a close."""
    server = await start_server(answer_tokens=60, decode_rate=100, grace_period=60)
    client = await RawClient.connect(url_of(server))
    ready = await client.start()
    await client.send({"type": "response.create", "input": PROMPT})
    await client.until("response.text.delta")
    await client.ws.close(1001, "page unload")
    again = await RawClient.connect(url_of(server))
    await again.resume(ready, 0)
    done = await again.until("response.done")
    assert done["status"] == "completed"
    await again.close()


async def test_interrupt_in_the_middle_of_a_10000_token_stream(start_server: StartServer) -> None:
    server = await start_server(answer_tokens=10_000, max_output_tokens=10_000, decode_rate=2000)
    client = await RawClient.connect(url_of(server))
    session_id = (await client.start())["session_id"]
    await client.send({"type": "response.create", "input": PROMPT})
    tokens = 0
    while tokens < 5000:
        message = await client.recv()
        if message["type"] == "response.text.delta":
            tokens += len(message["delta"].split())
    await client.send({"type": "response.interrupt"})
    done = await client.until("response.done")
    assert done["status"] == "interrupted"
    generated = done["usage"]["output_tokens_generated"]
    assert 5000 <= generated < 10_000
    assert _generated(server, session_id) == generated
    await asyncio.sleep(0.05)  # 100 decode steps at this rate
    assert _generated(server, session_id) == generated
    # Every sequenced event reached us in order with no gap.
    seqs = [m["seq"] for m in client.seen if "seq" in m]
    assert seqs == list(range(1, len(seqs) + 1))
    await client.close()

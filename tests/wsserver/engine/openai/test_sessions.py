"""The OpenAI engine behind a real worker, in front of a real llama.cpp server.

Interrupt, an abandoned session and an upstream killed mid-answer, seen from both ends:
the client's ``response.done`` and the upstream's slots.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.llama_server import LlamaServerProcess
from tests.processes import eventually
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, text_of
from wsserver.worker.server import WorkerServer

STORY = "Write a long story about a dragon."


def _upstream(llama: LlamaServerProcess, **extra: Any) -> dict[str, Any]:
    return {
        "engine": "openai",
        "upstream_url": llama.base_url,
        "upstream_temperature": 0.0,
        "upstream_retries": 0,
        **extra,
    }


async def _deltas(client: RawClient, count: int) -> list[dict[str, Any]]:
    received: list[dict[str, Any]] = []
    while len([m for m in received if m["type"] == "response.text.delta"]) < count:
        received.append(await client.recv(30))
        assert received[-1]["type"] != "response.done", received[-1]
    return received


async def _done(client: RawClient, received: list[dict[str, Any]]) -> dict[str, Any]:
    while not received or received[-1]["type"] != "response.done":
        received.append(await client.recv(30))
    return received[-1]


def _aborted(server: WorkerServer) -> int:
    return int(server.engine.stats()["aborted"])


async def test_interrupt_frees_the_upstream_slot(
    start_server: StartServer, llama_server: LlamaServerProcess
) -> None:
    server = await start_server(**_upstream(llama_server))
    client = await RawClient.connect(url_of(server))
    await client.start()
    await client.send({"type": "response.create", "input": STORY, "max_output_tokens": 400})
    received = await _deltas(client, 3)
    await client.send({"type": "response.interrupt"})
    done = await _done(client, received)
    assert done["status"] == "interrupted"
    assert _aborted(server) == 1
    await eventually(lambda: llama_server.busy() == 0, timeout=10)
    await client.close()


async def test_an_abandoned_session_is_aborted_at_the_upstream(
    start_server: StartServer, llama_server: LlamaServerProcess
) -> None:
    server = await start_server(**_upstream(llama_server), grace_period=0.2)
    client = await RawClient.connect(url_of(server))
    await client.start()
    await client.send({"type": "response.create", "input": STORY, "max_output_tokens": 400})
    await _deltas(client, 3)
    cancels = llama_server.log().count("cancel task")
    client.abort()  # gone without a goodbye; nobody resumes
    await eventually(lambda: _aborted(server) == 1, timeout=15)
    await eventually(lambda: llama_server.busy() == 0, timeout=10)
    assert llama_server.log().count("cancel task") > cancels, "the upstream never saw it go"


async def test_an_upstream_killed_mid_answer_fails_it_and_continue_picks_up(
    start_server: StartServer,
) -> None:
    llama = LlamaServerProcess(parallel=1).start()
    try:
        server = await start_server(**_upstream(llama))
        client = await RawClient.connect(url_of(server))
        ready = await client.start()
        await client.send({"type": "response.create", "input": STORY, "max_output_tokens": 40})
        received = await _deltas(client, 3)
        await asyncio.to_thread(llama.kill)
        done = await _done(client, received)
        assert (done["status"], done["reason"]) == ("failed", "upstream_error")
        kept = text_of(received)
        assert kept
        # The upstream comes back (same port); the answer continues from what was kept.
        port = llama.port
        llama = LlamaServerProcess(port, parallel=1).start()
        await client.send(
            {"type": "response.continue", "response_id": "resp_1", "max_output_tokens": 12}
        )
        created = await client.until("response.created", 30)
        assert created["continues"] == "resp_1"
        again: list[dict[str, Any]] = []
        second = await _done(client, again)
        assert second["status"] in ("completed", "incomplete"), second
        more = text_of(again)
        assert more and not more.startswith(kept), "answered again instead of continuing"
        history = server.sessions[ready["session_id"]].session.history()
        assert history[-1].role == "assistant"
        assert history[-1].text == kept + more
        await client.close()
    finally:
        llama.stop()

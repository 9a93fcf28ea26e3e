"""A full tool loop on the real model: ``--engine local`` with the small-model aid, the SDK.

SmolLM2-135M in the worker's own llama.cpp server (one thread, temperature 0) calls the
client's tool, the result goes back, and the model answers from it; a connection dropped
as the result goes out is resumed, the SDK sends the result again, and it is applied
once; the usage the client is billed is what the engine counted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.wsserver.conftest import StartServer, url_of
from wsserver.client import SessionClient

pytest.importorskip("xllamacpp")

EXAMPLE = Path(__file__).parent / "fixtures" / "set_light_example.json"

LOCAL = {
    "engine": "local",
    "local_threads": 1,
    "local_parallel": 1,
    "local_context": 2048,
    "local_chat_template": "tools",
    "local_tool_aid": True,
    "local_tool_example": str(EXAMPLE),
    "upstream_temperature": 0.0,
}

SET_LIGHT_PARAMETERS = {
    "type": "object",
    "properties": {"room": {"type": "string"}, "on": {"type": "boolean"}},
    "required": ["room", "on"],
}


async def test_the_model_calls_the_tool_and_answers_from_the_result_once(
    start_server: StartServer,
) -> None:
    server = await start_server(**LOCAL)
    calls: list[dict[str, Any]] = []
    holder: list[SessionClient] = []

    async def set_light(room: str, on: bool) -> dict[str, Any]:
        calls.append({"room": room, "on": on})
        # The connection drops as the result goes out: the SDK sends it again after the
        # resume; the server applies it once.
        asyncio.get_running_loop().call_soon(holder[0].drop_connection)
        return {"room": room, "on": on, "ok": True}

    async with SessionClient(url_of(server), max_output_tokens=40) as client:
        holder.append(client)
        await client.register_tool(
            "set_light",
            set_light,
            description="Turn the light in a room on or off.",
            parameters=SET_LIGHT_PARAMETERS,
        )
        result = await asyncio.wait_for(client.ask("Please turn on the light in the kitchen."), 120)
        assert client.reconnects == 1
        runtime = server.sessions[client.session_id or ""]
        turns = runtime.session.conversation.turns
    assert calls == [{"room": "kitchen", "on": True}], "the handler ran once, as asked"
    assert [c["name"] for c in result.tool_calls] == ["set_light"]
    assert [t.role for t in turns].count("tool") == 1, "the result was applied once"
    assert result.status == "completed", result
    answer = result.text.lower()
    assert "kitchen" in answer and " on" in answer, result.text
    usage = result.usage
    stats = server.engine.stats()
    assert usage["output_tokens_generated"] == stats["tokens_generated"] > 0
    assert 0 < usage["output_tokens_delivered"] <= usage["output_tokens_generated"]
    assert usage["input_tokens"] > 0

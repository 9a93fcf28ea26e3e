"""The SDK's tool loop and structured output against a real worker."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema

from tests.wsserver.conftest import StartServer, url_of
from wsserver.client import SessionClient

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def weather_tool(calls: list[str]) -> Any:
    def get_weather(city: str) -> dict[str, Any]:
        calls.append(city)
        return {"city": city, "temperature_c": 10 + len(city)}

    get_weather.parameters = WEATHER  # type: ignore[attr-defined]
    return get_weather


async def test_handlers_run_each_call_once_and_the_answer_uses_the_results(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=200)
    calls: list[str] = []

    async def get_time() -> str:
        await asyncio.sleep(0.01)
        return "noon"

    tools = {"get_weather": weather_tool(calls), "get_time": get_time}
    async with SessionClient(url_of(server), tools=tools) as client:
        result = await client.ask("weather in Paris and Oslo, and call get_time")
        assert result.status == "completed"
        assert sorted(calls) == ["Oslo", "Paris"]
        assert [c["name"] for c in result.tool_calls] == ["get_weather", "get_weather", "get_time"]
        for quoted in ('"city": "Paris"', '"city": "Oslo"', '"noon"'):
            assert quoted in result.text
        assert result.usage["output_tokens_generated"] == result.usage["output_tokens_delivered"]


async def test_a_failing_handler_sends_an_error_and_the_loop_goes_on(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=200)

    def get_weather(city: str) -> None:
        raise RuntimeError(f"no station in {city}")

    async with SessionClient(url_of(server), tools={"get_weather": get_weather}) as client:
        result = await client.ask("weather in Lima")
    assert result.status == "completed"
    assert "RuntimeError: no station in Lima" in result.text


async def test_a_result_resent_after_a_drop_is_applied_once(start_server: StartServer) -> None:
    server = await start_server(decode_rate=200)
    calls: list[str] = []
    holder: list[SessionClient] = []

    async def get_weather(city: str) -> str:
        calls.append(city)
        # The connection drops as the result goes out: it may or may not have
        # arrived; the SDK sends it again after the resume, the server applies it once.
        asyncio.get_running_loop().call_soon(holder[0].drop_connection)
        return f"sunny in {city}"

    async with SessionClient(url_of(server), tools={"get_weather": get_weather}) as client:
        holder.append(client)
        result = await client.ask("weather in Rome")
        assert client.reconnects == 1
        runtime = server.sessions[client.session_id or ""]
        tool_turns = [t for t in runtime.session.conversation.turns if t.role == "tool"]
    assert result.status == "completed"
    assert calls == ["Rome"], "the handler ran once"
    assert "sunny in Rome" in result.text
    assert len(tool_turns) == 1


async def test_tools_registered_on_an_open_session_are_used(start_server: StartServer) -> None:
    server = await start_server(decode_rate=200)
    async with SessionClient(url_of(server)) as client:
        await client.register_tool(
            "lookup",
            lambda term: {"term": term, "found": True},
            parameters={"type": "object", "properties": {"term": {"type": "string"}}},
        )
        updated = await client.next_event(10)
        while updated["type"] != "session.updated":
            updated = await client.next_event(10)
        assert updated["tools"] == ["lookup"]
        result = await client.ask("please call lookup")
    assert result.status == "completed"
    assert '"found": true' in result.text


async def test_structured_output_through_the_sdk(start_server: StartServer) -> None:
    server = await start_server(decode_rate=200)
    schema = {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "rating": {"type": "integer", "minimum": 1, "maximum": 5},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["title", "rating"],
    }
    async with SessionClient(url_of(server)) as client:
        result = await client.ask("review this", response_format=schema)
    assert result.status == "completed"
    jsonschema.validate(result.output_json, schema)
    partials = [e["value"] for e in result.events if e["type"] == "response.output_json.delta"]
    assert partials and partials[-1] == result.output_json


async def test_invalid_arguments_are_retried_when_the_server_allows_it(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=200, tool_retries=1)
    calls: list[str] = []
    async with SessionClient(url_of(server), tools={"get_weather": weather_tool(calls)}) as client:
        result = await client.ask("weather in Paris, with bad arguments")
    assert result.status == "completed"
    rejected = [e for e in result.events if e["type"] == "response.tool_call.rejected"]
    assert len(rejected) == 1 and rejected[0]["retry"] == 1
    assert "do not match its schema" in rejected[0]["message"]
    # Only the valid call reached the handler, once.
    assert calls == ["Paris"]
    assert [c["arguments"] for c in result.tool_calls] == [{"city": "Paris"}]


async def test_without_retries_invalid_arguments_fail_the_response(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=200)
    calls: list[str] = []
    async with SessionClient(url_of(server), tools={"get_weather": weather_tool(calls)}) as client:
        result = await client.ask("weather in Paris, with bad arguments")
    assert (result.status, result.reason) == ("failed", "invalid_tool_arguments")
    assert result.events[-1]["error"]["name"] == "get_weather"
    assert calls == [] and result.tool_calls == []

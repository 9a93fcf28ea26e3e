"""``update_session`` and response overrides through the SDK, against real workers."""

from __future__ import annotations

import json
from typing import Any

from protocol.conversation import NO_RESULT_TEXT
from protocol.messages import AudioSettings
from tests.stored_sessions import stored_snapshot_when
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient
from wsserver.client import Backoff, SessionClient

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
VOICE: dict[str, Any] = {"sample_rate": 16000, "turn_detection": {"type": "manual"}}


async def _event(client: SessionClient, kind: str) -> dict[str, Any]:
    while (event := await client.next_event(10))["type"] != kind:
        pass
    return event


def _prompt_tokens(*texts: str) -> int:
    """What the simulated engine counts for a prompt of these turns (words + 4 each)."""
    return sum(len(t.split()) + 4 for t in texts)


async def test_updated_instructions_reach_the_engine_and_an_override_holds_once(
    start_server: StartServer,
) -> None:
    server = await start_server()
    async with SessionClient(url_of(server)) as client:
        await client.update_session(instructions="answer like a pirate")
        updated = await _event(client, "session.updated")
        assert updated["instructions"] == "answer like a pirate"
        first = await client.ask("hello")
        # The engine's prompt was [system, user]: its input count says so.
        assert first.usage["input_tokens"] == _prompt_tokens("answer like a pirate", "hello")
        await client.create_response("again", instructions="be brief")
        second = await client.collect_response(10)
        history = ("hello", first.text, "again")
        assert second.usage["input_tokens"] == _prompt_tokens("be brief", *history)
        await client.update_session(instructions="")
        await _event(client, "session.updated")
        third = await client.ask("bye")
        assert third.usage["input_tokens"] == _prompt_tokens(*history, second.text, "bye")


async def test_client_tool_rounds_end_at_the_calls_and_the_next_response_answers(
    start_server: StartServer,
) -> None:
    server = await start_server()
    ran: list[str] = []

    def get_weather(city: str) -> dict[str, Any]:
        ran.append(city)
        return {"city": city, "sky": "clear"}

    get_weather.parameters = WEATHER  # type: ignore[attr-defined]
    async with SessionClient(url_of(server), tools={"get_weather": get_weather}) as client:
        await client.update_session(tool_rounds="client")
        assert (await _event(client, "session.updated"))["tool_rounds"] == "client"
        called = await client.ask("weather in Paris")
        assert (called.status, called.reason) == ("completed", "tool_calls")
        done = called.events[-1]
        assert [c["name"] for c in done["tool_calls"]] == ["get_weather"]
        assert called.text == ""
        accepted = await _event(client, "tool.result.accepted")  # the SDK ran the handler
        assert accepted["call_id"] == done["tool_calls"][0]["call_id"]
        assert ran == ["Paris"]
        await client.create_response()
        answer = await client.collect_response(10)
    assert answer.status == "completed" and answer.reason is None
    assert json.dumps({"city": "Paris", "sky": "clear"})[1:-1] in answer.text
    assert not answer.tool_calls


async def test_client_tool_rounds_chosen_by_the_sdk_at_start(start_server: StartServer) -> None:
    server = await start_server()
    async with SessionClient(url_of(server), tool_rounds="client", run_tools=False) as client:
        await client.register_tool("get_weather", parameters=WEATHER)
        called = await client.ask("weather in Rome")
    assert (called.status, called.reason) == ("completed", "tool_calls")


async def test_voice_output_turned_off_and_a_text_session_made_a_voice_one(
    start_server: StartServer,
) -> None:
    server = await start_server()
    async with SessionClient(url_of(server), audio=VOICE) as client:
        spoken = await client.ask("hello")
        assert spoken.audio, "a voice session speaks"
        await client.update_session(audio={**VOICE, "output": False})
        await _event(client, "session.updated")
        silent = await client.ask("hello again")
        assert silent.audio == b"" and silent.text
        await client.create_response("and now?", audio_output=True)
        assert (await client.collect_response(10)).audio, "an override speaks this one"
        voice = server.sessions[client.session_id or ""].voice
        assert voice is not None and voice.input.manual
        await client.update_session(audio={**VOICE, "turn_detection": {"type": "server_vad"}})
        await _event(client, "session.updated")
        assert not voice.input.manual, "the detector follows the new turn detection"
    async with SessionClient(url_of(server)) as client:
        assert (await client.ask("hello")).audio == b""
        await client.update_session(audio=VOICE)
        assert (await _event(client, "session.updated"))["audio"]["sample_rate"] == 16000
        assert (await client.ask("speak")).audio
        await client.send_audio(bytes(3200), last=True)  # the input side works too
        assert (await _event(client, "input_audio.committed"))["duration_ms"] >= 100


async def test_updated_settings_move_with_the_session_through_redis(
    start_server: StartServer, redis_url: str
) -> None:
    a = await start_server(store=redis_url)
    b = await start_server(store=redis_url)
    client = SessionClient([url_of(a), url_of(b)], backoff=Backoff(base=0.05))
    async with client:
        await client.update_session(instructions="stay", tool_rounds="client", audio=VOICE)
        await _event(client, "session.updated")
        session_id = client.session_id or ""
        stored = await stored_snapshot_when(
            redis_url, session_id, lambda s: s.tool_rounds == "client"
        )
        assert (stored.instructions, stored.audio) == ("stay", {**_full(VOICE)})
        client.drop_connection()
        result = await client.ask("hello")
        assert client.url == url_of(b)
        moved = b.sessions[session_id]
        assert moved.session.conversation.instructions == "stay"
        assert moved.session.tool_rounds == "client"
        assert moved.voice is not None and moved.core.turns is not None
        assert client.ready["audio"]["sample_rate"] == 16000
        assert result.usage["input_tokens"] == _prompt_tokens("stay", "hello")


def _full(audio: dict[str, Any]) -> dict[str, Any]:
    """Audio settings as the server stores them (every default filled in)."""
    return AudioSettings.model_validate(audio).model_dump()


async def test_client_tool_rounds_chosen_at_session_start_and_a_placeholder_for_no_result(
    start_server: StartServer,
) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    try:
        tool = {"name": "get_weather", "parameters": WEATHER}
        await client.start(tools=[tool], settings={"tool_rounds": "client"})
        await client.send({"type": "response.create", "input": "weather in Oslo"})
        done = await client.until("response.done")
        assert (done["status"], done["reason"]) == ("completed", "tool_calls")
        # Never answered: the next prompt gives the engine the placeholder result.
        await client.send({"type": "input.text", "text": "never mind"})
        await client.send({"type": "tool.result", "call_id": "nope", "output": 1})
        assert (await client.until("error"))["code"] == "unknown_tool_call"
        runtime = next(iter(server.sessions.values()))
        prompt = runtime.session.history()
        assert [t.role for t in prompt] == ["user", "assistant", "tool", "user"]
        assert prompt[2].text == NO_RESULT_TEXT
    finally:
        await client.close()

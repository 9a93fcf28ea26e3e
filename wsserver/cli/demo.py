"""``wsserver serve --demo``: show a session working against the running server."""

from __future__ import annotations

import asyncio
from importlib import resources

from wsserver.cli.demo_spoken import spoken_turn_demo
from wsserver.cli.demo_tools import get_weather
from wsserver.client import SessionClient
from wsserver.engine.synthetic_voice import SyntheticVoice
from wsserver.worker.settings import Settings

_RATE = 16000


DEMO_TOOL_EXAMPLE = str(resources.files("wsserver.cli") / "demo_tool_example.json")
"""The worked example (a get_weather call and its answer) the demo gives a tiny model."""


def demo_settings(settings: Settings) -> Settings:
    """The worker's settings for ``--demo``: on the local engine, temperature 0 and the
    small-model tool aid with the demo's worked example, unless the flags set them."""
    if settings.engine != "local":
        return settings
    given = settings.model_fields_set
    update: dict[str, object] = {}
    if not {"local_tool_aid", "local_tool_example"} & given:
        update.update(local_tool_aid=True, local_tool_example=DEMO_TOOL_EXAMPLE)
    if "upstream_temperature" not in given:
        update["upstream_temperature"] = 0.0
    return settings.model_copy(update=update)


async def run_demo(url: str, *, real_model: bool = False, voice: str = "synthetic") -> None:
    """Stream an answer, interrupt one, drop the connection mid-answer and resume.

    ``real_model``: the engine is a real (small) model, not the simulated one: answers
    are capped short and the tool question asks for one city (a tiny model makes one call
    per round). ``voice``: ``synthetic`` (talk over a spoken answer with syllables the
    simulated engine hears as speech), ``spoken`` (a question spoken by piper through
    the worker's real STT and TTS) or ``none``.
    """
    print(f"\n--- demo against {url} ---", flush=True)
    cap = _REAL_MODEL_TOKENS if real_model else None
    async with SessionClient(url, instructions="be brief", max_output_tokens=cap) as client:
        print(f"session {client.session_id} ready", flush=True)

        print("\nuser: what is a websocket?\nassistant: ", end="", flush=True)
        result = await _stream(client, "what is a websocket?")
        print(f"\n  -> {result}", flush=True)

        print("\nuser: tell me a long story (interrupted after 5 deltas)\nassistant: ", end="")
        await client.create_response("tell me a long story", max_output_tokens=cap or 400)
        deltas = 0
        while True:
            event = await client.next_event()
            if event["type"] == "response.text.delta":
                print(event["delta"], end="", flush=True)
                deltas += 1
                if deltas == 5:
                    await client.interrupt()
            elif event["type"] == "response.done":
                print(f"\n  -> {_summary(event)}", flush=True)
                break

        print("\nuser: and another answer (connection dropped after 5 deltas)\nassistant: ", end="")
        await client.create_response("and another answer")
        deltas = 0
        while True:
            event = await client.next_event()
            if event["type"] == "response.text.delta":
                print(event["delta"], end="", flush=True)
                deltas += 1
                if deltas == 5:
                    client.drop_connection()
                    print(" [connection dropped, resuming] ", end="", flush=True)
            elif event["type"] == "response.done":
                print(
                    f"\n  -> {_summary(event)}; reconnects {client.reconnects}, "
                    f"last seq {client.last_seq}",
                    flush=True,
                )
                break
    await _tools_demo(url, "what is the weather in Paris?" if real_model else _TWO_CITIES)
    if voice == "synthetic":
        await _voice_demo(url)
    elif voice == "spoken":
        await spoken_turn_demo(url, cap or 400)
    else:
        print("\nvoice: skipped (no --stt and --tts: the engine does not listen or speak)")
    print("--- demo done ---", flush=True)


_REAL_MODEL_TOKENS = 48
"""Answer cap on a real model: a tiny CPU model rambles, and the demo should be quick."""

_TWO_CITIES = "what is the weather in Paris and Oslo?"


async def _tools_demo(url: str, question: str) -> None:
    """A tool loop: the model calls a tool, the SDK runs it, the answer goes on."""
    print(f"\nuser: {question} (with a weather tool)", flush=True)
    async with SessionClient(url, tools={"get_weather": get_weather}) as client:
        result = await client.ask(question)
        for call in result.tool_calls:
            print(f"  [tool call {call['name']} {call['arguments']}]", flush=True)
        print(f"assistant: {result.text}\n  -> status {result.status}", flush=True)


async def _voice_demo(url: str) -> None:
    """Talk over a spoken answer: barge-in, truncation to what was heard, the turn answered."""
    print("\nvoice: ask for a story, then talk over it after a second", flush=True)
    audio = {"sample_rate": _RATE}
    async with SessionClient(url, audio=audio, simulate_playback=True) as client:
        await client.create_response("tell me a long story", max_output_tokens=400)
        # Synthetic syllables stand in for a microphone: 1.2 s of "speech", then silence.
        voice = SyntheticVoice(_RATE, 100)
        speech = b"".join(voice.speak(i) for i in range(12))
        silence = bytes(_RATE * 2)
        mic = asyncio.create_task(client.stream_audio(bytes(_RATE * 2) + speech + silence))
        answers = 0
        while answers < 2:
            event = await asyncio.wait_for(client.next_event(), 30)
            kind = event["type"]
            if kind == "input_audio.speech_started":
                print(f"  [user starts talking at {event['audio_start_ms']} ms]", flush=True)
            elif kind == "input_audio.committed":
                print(f"  [user turn: {event['duration_ms']} ms of audio]", flush=True)
            elif kind == "response.done":
                answers += 1
                heard = f", heard {event['played_ms']} ms" if "played_ms" in event else ""
                print(
                    f"  -> {event['response_id']}: {event['status']}"
                    f"{' (' + event['reason'] + ')' if event.get('reason') else ''}, "
                    f"audio sent {event.get('audio_ms', 0)} ms{heard}",
                    flush=True,
                )
        await mic


async def _stream(client: SessionClient, text: str) -> str:
    await client.create_response(text)
    while True:
        event = await asyncio.wait_for(client.next_event(), 30)
        if event["type"] == "response.text.delta":
            print(event["delta"], end="", flush=True)
        elif event["type"] == "response.done":
            return _summary(event)


def _summary(event: dict[str, object]) -> str:
    usage = event.get("usage")
    return f"status {event['status']}, usage {usage}"

"""Run with the openai SDK's Python: one turn over ``/v1/realtime`` with the unmodified
SDK, in one of three modes, read through the SDK's typed objects. Prints one JSON line.

* ``text``: a text turn: the event types, the text, the final status and usage;
* ``cancel``: ``response.cancel`` after the first text delta: the final status;
* ``tool``: the Realtime tool pattern: the response that calls ends (``response.done``),
  the client sends the ``function_call_output`` (nothing starts: a ``session.update``
  after it is answered before any response), then ``response.create``: a second
  response answers with the output;
* ``audio``: a spoken turn (a 16 kHz WAV, resampled to 24 kHz) appended in real time
  with server VAD on, answered by voice;
* ``barge_in``: the same, spoken again while the answer streams: the first
  ``response.done`` (cancelled by the turn);
* ``truncate``: a voice answer interrupted (``output_audio_buffer.clear``) after a few
  audio deltas, its item truncated to ``audio_end_ms`` (the WAV argument: a number, or
  ``none`` for no truncate), then a second turn: its ``input_tokens`` show the history.

Usage: python realtime_sdk_turns.py MODE BASE_URL API_KEY [WAV]
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import wave
from array import array
from typing import Any

from openai import AsyncOpenAI

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def speech_24k(path: str) -> bytes:
    """The WAV's speech at 24 kHz between 300 ms and 1200 ms of silence."""
    with wave.open(path) as wav:
        rate, data = wav.getframerate(), wav.readframes(wav.getnframes())
    return bytes(24 * 2 * 300) + resample(data, rate, 24000) + bytes(24 * 2 * 1200)


def resample(pcm: bytes, source: int, target: int) -> bytes:
    """PCM16 from ``source`` Hz to ``target`` Hz by linear interpolation (test speech)."""
    samples = array("h", pcm)
    count = len(samples) * target // source
    out = array("h", bytes(2 * count))
    for index in range(count):
        position = index * source / target
        low = int(position)
        high = min(low + 1, len(samples) - 1)
        fraction = position - low
        out[index] = int(samples[low] * (1 - fraction) + samples[high] * fraction)
    return out.tobytes()


async def speak(connection: Any, audio: bytes) -> None:
    """Append ``audio`` in 100 ms pieces at the pace it plays."""
    step = 24000 * 2 // 10
    for offset in range(0, len(audio), step):
        chunk = base64.b64encode(audio[offset : offset + step]).decode()
        await connection.input_audio_buffer.append(audio=chunk)
        await asyncio.sleep(0.1)


async def say(connection: Any, text: str) -> None:
    """A user text turn and a response to it."""
    await connection.conversation.item.create(
        item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    )
    await connection.response.create()


async def truncated_turns(connection: Any, audio_end_ms: str | None) -> dict[str, Any]:
    """A voice answer cut short (and truncated), then a second turn; what was seen."""
    out: dict[str, Any] = {"truncated": []}
    item_id, audio_deltas = None, 0
    await say(connection, "Say something.")
    async for event in connection:
        if event.type == "response.output_item.added" and item_id is None:
            item_id = event.item.id
        if event.type == "response.output_audio.delta":
            audio_deltas += 1
            if audio_deltas == 5:
                if audio_end_ms != "none":
                    await connection.conversation.item.truncate(
                        item_id=item_id, content_index=0, audio_end_ms=int(audio_end_ms or 0)
                    )
                await connection.output_audio_buffer.clear()
        if event.type == "conversation.item.truncated":
            out["truncated"].append([event.item_id, event.content_index, event.audio_end_ms])
        if event.type == "error":
            out.setdefault("errors", []).append(event.error.code)
        if event.type == "response.created" and "first" in out:
            await connection.response.cancel()  # its prompt is what counts, not its answer
        if event.type == "response.done":
            if "first" not in out:
                out["first"] = {"status": event.response.status, "item_id": item_id}
                await say(connection, "Go on.")
            else:
                out["second_input_tokens"] = event.response.usage.input_tokens
                return out
    return out


async def main(mode: str, base_url: str, api_key: str, wav: str | None = None) -> None:
    client = AsyncOpenAI(api_key=api_key, base_url=base_url)
    types: list[str] = []
    text: list[str] = []
    summary: dict[str, Any] = {}
    async with client.realtime.connect(model="gpt-realtime") as connection:
        created = await connection.recv()
        types.append(created.type)
        if created.type == "session.created":
            summary["session_id"] = created.session.id
        audio_bytes = 0
        if mode in ("audio", "barge_in"):
            assert wav is not None
            speech = speech_24k(wav)
            speaking = asyncio.create_task(speak(connection, speech))
            async for event in connection:
                types.append(event.type)
                if mode == "barge_in" and event.type == "response.created":
                    # Speak again while the answer streams: server VAD interrupts it.
                    await speaking
                    speaking = asyncio.create_task(speak(connection, speech))
                if event.type == "response.output_audio.delta":
                    audio_bytes += len(base64.b64decode(event.delta))
                if event.type == "response.output_audio_transcript.delta":
                    text.append(event.delta)
                if event.type == "response.done":
                    summary.update(
                        types=types,
                        text="".join(text),
                        audio_bytes=audio_bytes,
                        status=event.response.status,
                        reason=(
                            event.response.status_details.reason
                            if event.response.status_details
                            else None
                        ),
                        output_types=[item.type for item in event.response.output],
                    )
                    speaking.cancel()
                    print(json.dumps(summary))
                    return
        if mode == "truncate":
            summary.update(await truncated_turns(connection, wav))
            print(json.dumps(summary))
            return
        session: dict[str, Any] = {"type": "realtime", "output_modalities": ["text"]}
        if mode == "tool":
            session["tools"] = [WEATHER_TOOL]
        await connection.session.update(session=session)  # type: ignore[arg-type]
        ask = "What is the weather in Paris?" if mode == "tool" else "Say something."
        await connection.conversation.item.create(
            item={
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": ask}],
            }
        )
        await connection.response.create()
        if mode == "tool":
            summary.update(await tool_rounds(connection))
            print(json.dumps(summary))
            return
        async for event in connection:
            types.append(event.type)
            if event.type == "error":
                summary.setdefault("errors", []).append(event.error.code)
            if event.type == "response.output_text.delta":
                text.append(event.delta)
                if mode == "cancel" and len(text) == 1:
                    await connection.response.cancel()
            if event.type == "response.done":
                response = event.response
                summary.update(
                    types=types,
                    text="".join(text),
                    status=response.status,
                    reason=response.status_details.reason if response.status_details else None,
                    output_types=[item.type for item in response.output],
                    output_text=[
                        item.content[0].text for item in response.output if item.type == "message"
                    ],
                    input_tokens=response.usage.input_tokens,
                    output_tokens=response.usage.output_tokens,
                    total_tokens=response.usage.total_tokens,
                )
                print(json.dumps(summary))
                return


async def tool_rounds(connection: Any) -> dict[str, Any]:
    """The response that calls, the output, then the client's next response."""
    out: dict[str, Any] = {"responses": [], "after_output": []}
    text: list[str] = []
    async for event in connection:
        if event.type == "error":
            out.setdefault("errors", []).append(event.error.code)
        if event.type == "response.output_text.delta":
            text.append(event.delta)
        if event.type == "response.function_call_arguments.done":
            out["call"] = {"name": event.name, "arguments": json.loads(event.arguments)}
        if out["after_output"] is not None and len(out["responses"]) == 1:
            out["after_output"].append(event.type)
        if event.type == "session.updated" and len(out["responses"]) == 1:
            # Answered in order after the output: had the output started a response,
            # its response.created would have come first.
            out["after_output"] = out["after_output"][:-1]
            out["after_output_done"] = list(out["after_output"])
            out["after_output"] = None
            await connection.response.create()
        if event.type == "response.done":
            response = event.response
            out["responses"].append(
                {
                    "status": response.status,
                    "details": response.status_details.reason if response.status_details else None,
                    "output_types": [item.type for item in response.output],
                    "text": "".join(text),
                    "input_tokens": response.usage.input_tokens,
                    "output_tokens": response.usage.output_tokens,
                }
            )
            text.clear()
            if len(out["responses"]) == 2:
                return out
            (call,) = [item for item in response.output if item.type == "function_call"]
            await connection.conversation.item.create(
                item={
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": json.dumps({"temp_c": 21}),
                }
            )
            await connection.session.update(session={"type": "realtime", "instructions": ""})
    return out


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

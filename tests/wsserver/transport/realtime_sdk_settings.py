"""Run with the openai SDK's Python: the settings of ``session.update`` and
``response.create`` over ``/v1/realtime``, with the unmodified SDK. Prints one JSON line.

* ``instructions``: a text-only session (``output_modalities: ["text"]``) with
  instructions set by ``session.update``; a turn; then a second turn whose
  ``response.create`` overrides the instructions. Each response's event types, text
  and usage;
* ``manual``: ``turn_detection: null``; speech appended (the WAV argument), committed,
  then a ``session.update`` as a marker (answered in order: a response started by the
  commit would come first), then ``response.create``.

Usage: python realtime_sdk_settings.py MODE BASE_URL API_KEY [WAV]
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from openai import AsyncOpenAI
from realtime_sdk_turns import speak, speech_24k

PIRATE = "Answer like a pirate would."
BRIEF = "Be brief."


async def until(connection: Any, kind: str, types: list[str]) -> Any:
    """Every event up to the next of ``kind`` (their types into ``types``); that event."""
    async for event in connection:
        types.append(event.type)
        if event.type == "error":
            types.append(f"error:{event.error.code}:{event.error.message}")
        if event.type == kind:
            return event
    raise EOFError(f"the connection ended before {kind}")


async def response(connection: Any) -> dict[str, Any]:
    """The events of one response, up to its ``response.done``."""
    types: list[str] = []
    text: list[str] = []
    async for event in connection:
        types.append(event.type)
        if event.type in ("response.output_text.delta", "response.output_audio_transcript.delta"):
            text.append(event.delta)
        if event.type == "error":
            types.append(f"error:{event.error.code}")
        if event.type == "response.done":
            done = event.response
            return {
                "types": types,
                "text": "".join(text),
                "status": done.status,
                "output_modalities": done.output_modalities,
                "input_tokens": done.usage.input_tokens,
                "output_tokens": done.usage.output_tokens,
                "audio_tokens": done.usage.output_token_details.audio_tokens,
            }
    raise EOFError("the connection ended before response.done")


async def say(connection: Any, text: str, **params: Any) -> None:
    await connection.conversation.item.create(
        item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    )
    if params:
        await connection.response.create(response=params)
    else:
        await connection.response.create()


async def instructions(connection: Any) -> dict[str, Any]:
    session = {"type": "realtime", "output_modalities": ["text"], "instructions": PIRATE}
    await connection.session.update(session=session)
    updated = await until(connection, "session.updated", [])
    out: dict[str, Any] = {
        "updated": {
            "instructions": updated.session.instructions,
            "output_modalities": updated.session.output_modalities,
        }
    }
    await say(connection, "Say something.")
    out["first"] = await response(connection)
    await say(connection, "Again.", instructions=BRIEF)
    out["second"] = await response(connection)
    return out


async def manual(connection: Any, wav: str) -> dict[str, Any]:
    session = {"type": "realtime", "audio": {"input": {"turn_detection": None}}}
    await connection.session.update(session=session)  # type: ignore[arg-type]
    updated = await until(connection, "session.updated", [])
    out: dict[str, Any] = {"turn_detection": updated.session.audio.input.turn_detection}
    # At the pace it plays: server VAD, were it on, would hear the speech start.
    await speak(connection, speech_24k(wav))
    await connection.input_audio_buffer.commit()
    await connection.session.update(session={"type": "realtime", "instructions": ""})
    before: list[str] = []
    await until(connection, "session.updated", before)
    out["before_create"] = before
    await connection.response.create()
    out["answer"] = await response(connection)
    return out


async def main(mode: str, base_url: str, api_key: str, wav: str | None = None) -> None:
    client = AsyncOpenAI(api_key=api_key, base_url=base_url)
    async with client.realtime.connect(model="gpt-realtime") as connection:
        created = await connection.recv()
        assert created.type == "session.created", created.type
        if mode == "instructions":
            out = await instructions(connection)
        else:
            assert wav is not None
            out = await manual(connection, wav)
        out["session_id"] = created.session.id
        print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

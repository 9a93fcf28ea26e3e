"""Run with the openai SDK's Python: one turn over ``/v1/realtime`` with the unmodified
SDK, in one of three modes, read through the SDK's typed objects. Prints one JSON line.

* ``text``: a text turn: the event types, the text, the final status and usage;
* ``cancel``: ``response.cancel`` after the first text delta: the final status;
* ``tool``: a function call, its ``function_call_output``, and the answer that follows.

Usage: python realtime_sdk_turns.py MODE BASE_URL API_KEY
"""

from __future__ import annotations

import asyncio
import json
import sys
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


async def main(mode: str, base_url: str, api_key: str) -> None:
    client = AsyncOpenAI(api_key=api_key, base_url=base_url)
    types: list[str] = []
    text: list[str] = []
    summary: dict[str, Any] = {}
    async with client.realtime.connect(model="gpt-realtime") as connection:
        created = await connection.recv()
        types.append(created.type)
        if created.type == "session.created":
            summary["session_id"] = created.session.id
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
        async for event in connection:
            types.append(event.type)
            if event.type == "error":
                summary.setdefault("errors", []).append(event.error.code)
            if event.type == "response.output_text.delta":
                text.append(event.delta)
                if mode == "cancel" and len(text) == 1:
                    await connection.response.cancel()
            if event.type == "response.function_call_arguments.done":
                summary["call"] = {"name": event.name, "arguments": json.loads(event.arguments)}
                await connection.conversation.item.create(
                    item={
                        "type": "function_call_output",
                        "call_id": event.call_id,
                        "output": json.dumps({"temp_c": 21}),
                    }
                )
                await connection.response.create()
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


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))

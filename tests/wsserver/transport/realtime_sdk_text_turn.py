"""Run with the openai SDK's Python: one text turn over ``/v1/realtime`` with the
unmodified SDK. Prints one JSON line: the event types received, the text, and the
final response's status and usage (read through the SDK's typed objects).

Usage: python realtime_sdk_text_turn.py BASE_URL API_KEY
"""

from __future__ import annotations

import asyncio
import json
import sys

from openai import AsyncOpenAI


async def main(base_url: str, api_key: str) -> None:
    client = AsyncOpenAI(api_key=api_key, base_url=base_url)
    types: list[str] = []
    text: list[str] = []
    async with client.realtime.connect(model="gpt-realtime") as connection:
        created = await connection.recv()
        types.append(created.type)
        await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
        await connection.conversation.item.create(
            item={
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Say something."}],
            }
        )
        await connection.response.create()
        async for event in connection:
            types.append(event.type)
            if event.type == "response.output_text.delta":
                text.append(event.delta)
            if event.type == "response.done":
                response = event.response
                usage = response.usage
                summary = {
                    "session_id": created.session.id if created.type == "session.created" else None,
                    "types": types,
                    "text": "".join(text),
                    "status": response.status,
                    "output_text": response.output[0].content[0].text,
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "total_tokens": usage.total_tokens,
                }
                print(json.dumps(summary))
                return


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))

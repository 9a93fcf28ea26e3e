"""Run with the openai SDK's Python (it pins ``websockets<16``): TURNS answers and TURNS
cancels over ``/v1/realtime`` with the unmodified SDK, timed the way the benchmark's own
clients time them. Imports only the SDK and the standard library. Prints one JSON line.

Usage: python sdk_turns.py BASE_URL TURNS CANCEL_AFTER
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from openai import AsyncOpenAI

TEXT = ("response.output_text.delta", "response.output_audio_transcript.delta")
ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi."}]}


async def ask(connection: Any) -> None:
    await connection.conversation.item.create(item=ITEM)
    await connection.response.create()


async def main(base_url: str, turns: int, cancel_after: int) -> None:
    client = AsyncOpenAI(api_key="benchmark", base_url=base_url)
    ttft: list[float] = []
    cancel: list[float] = []
    async with client.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(session={"type": "realtime", "output_modalities": ["text"]})
        while (await connection.recv()).type != "session.updated":
            pass
        for _ in range(turns):
            began, first = time.perf_counter(), None
            await ask(connection)
            while True:
                event = await connection.recv()
                if event.type in TEXT and first is None:
                    first = time.perf_counter() - began
                if event.type == "response.done":
                    break
            if first is not None:
                ttft.append(first)
            await ask(connection)
            deltas, sent = 0, 0.0
            while True:
                event = await connection.recv()
                if event.type in TEXT:
                    deltas += 1
                    if deltas == cancel_after:
                        sent = time.perf_counter()
                        await connection.response.cancel()
                if event.type == "response.done":
                    if sent and event.response.status == "cancelled":
                        cancel.append(time.perf_counter() - sent)
                    break
    print(json.dumps({"ttft_s": ttft, "cancel_s": cancel}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))

"""``wsserver serve --demo``: show a session working against the running server."""

from __future__ import annotations

import asyncio

from wsserver.client import SessionClient


async def run_demo(url: str) -> None:
    """Stream an answer, interrupt one, drop the connection mid-answer and resume."""
    print(f"\n--- demo against {url} ---", flush=True)
    async with SessionClient(url, instructions="be brief") as client:
        print(f"session {client.session_id} ready", flush=True)

        print("\nuser: what is a websocket?\nassistant: ", end="", flush=True)
        result = await _stream(client, "what is a websocket?")
        print(f"\n  -> {result}", flush=True)

        print("\nuser: tell me a long story (interrupted after 5 deltas)\nassistant: ", end="")
        await client.create_response("tell me a long story", max_output_tokens=400)
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
    print("--- demo done ---", flush=True)


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

"""Run with the openai SDK's Python: a text turn over ``/v1/realtime`` with the unmodified
SDK through a loopback TCP relay that this script cuts (the SDK sees 1006), resumed by
the SDK's own reconnect with the ``on_reconnecting`` hook giving the resume headers.
Prints one JSON line: the answer, every event id received, the event types.

* ``cut N[,M...]``: cut the relay after the N-th (and M-th...) text delta of the answer;
* ``idle``: answer a turn, cut while nothing runs, then a second turn on the resumed session;
* ``none``: no cut (the same relay, for the answer to compare with);
* ``voice``: a voice answer (audio and transcript deltas), cut after the listed
  transcript deltas (none: uncut).

Usage: python realtime_sdk_resume.py MODE CUTS HOST PORT API_KEY
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from typing import Any

from openai import AsyncOpenAI


class Relay:
    """A TCP relay on 127.0.0.1 to ``upstream``; :meth:`cut` aborts every live connection."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.live: list[asyncio.Transport] = []
        self.server: asyncio.Server | None = None
        self.accepted = 0

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        pair = [writer.transport, up_writer.transport]
        self.live.extend(pair)  # type: ignore[arg-type]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        """Drop every relayed connection at once, as a network handoff does."""
        for transport in self.live:
            transport.abort()
        self.live.clear()


async def main(mode: str, cuts_text: str, host: str, port: str, api_key: str) -> None:
    relay = Relay(host, int(port))
    relay_port = await relay.start()
    cuts = [int(cut) for cut in cuts_text.split(",") if cut]
    client = AsyncOpenAI(api_key=api_key, base_url=f"http://127.0.0.1:{relay_port}/v1")
    resume: dict[str, str] = {}
    last_id: list[str] = []
    reconnects: list[int] = []
    reconnected = asyncio.Event()

    def on_reconnecting(event: Any) -> dict[str, Any]:
        reconnects.append(event.close_code)
        reconnected.set()
        headers = {
            "X-Wsserver-Session": resume["session_id"],
            "X-Wsserver-Resume-Token": resume["resume_token"],
        }
        if last_id:
            headers["X-Wsserver-Last-Event-Id"] = last_id[-1]
        return {"extra_headers": headers}

    ids: list[str] = []
    types: list[str] = []
    answers: list[str] = []
    deltas: list[str] = []
    audio_bytes = 0
    async with client.realtime.connect(
        model="gpt-realtime", on_reconnecting=on_reconnecting
    ) as connection:
        turns = 2 if mode == "idle" else 1

        async def ask() -> None:
            await connection.conversation.item.create(
                item={
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Say something."}],
                }
            )
            await connection.response.create()

        async def ask_after_reconnect() -> None:
            await reconnected.wait()
            await ask()

        asking: asyncio.Task[None] | None = None
        async for event in connection:
            ids.append(event.event_id)
            types.append(event.type)
            last_id.append(event.event_id)  # whatever it is: every id names a point
            if event.type == "session.created":
                # The server's extension: the SDK keeps the unknown field.
                resume.update(event.resume)  # type: ignore[attr-defined]
                if mode != "voice":
                    await connection.session.update(
                        session={"type": "realtime", "output_modalities": ["text"]}
                    )
                await ask()
            if event.type == "response.output_audio.delta":
                audio_bytes += len(base64.b64decode(event.delta))
            if event.type in (
                "response.output_text.delta",
                "response.output_audio_transcript.delta",
            ):
                deltas.append(event.delta)
                if cuts and len(deltas) == cuts[0]:
                    cuts.pop(0)
                    relay.cut()
            if event.type == "response.done":
                answers.append("".join(deltas))
                deltas.clear()
                if len(answers) == turns:
                    break
                if mode == "idle":
                    relay.cut()  # nothing runs: the resume replays nothing
                    # The SDK reconnects while this loop reads; ask once it has.
                    asking = asyncio.create_task(ask_after_reconnect())
    if asking is not None:
        await asking
    print(
        json.dumps(
            {
                "answers": answers,
                "ids": ids,
                "types": types,
                "reconnects": reconnects,
                "session_id": resume.get("session_id"),
                "relayed_connections": relay.accepted,
                "audio_bytes": audio_bytes,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))

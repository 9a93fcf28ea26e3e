"""An unmodified ``openai`` SDK app that survives a dropped connection to ``wsserver serve``.

The app keeps the resume extension's three values (``session.created``'s ``resume``
field and the last session ``event_id`` it received) and gives them back as headers in
the SDK's ``on_reconnecting`` hook: the SDK reconnects by itself on 1006, the server
resumes the session and sends only the events the app has not seen.

``--drop-after N`` routes the connection through a small loopback relay that cuts it
after the N-th text delta, to show a drop mid-answer. Run it with the SDK's own Python
(``pip install "openai[realtime]"``; it pins websockets<16)::

    wsserver serve --auth none &
    python examples/realtime_resume.py --url http://127.0.0.1:8765/v1 --drop-after 3
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from openai import AsyncOpenAI


class CuttingRelay:
    """A TCP relay on 127.0.0.1 that :meth:`cut` drops, as a network handoff does."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.live: list[asyncio.BaseTransport] = []

    async def start(self) -> int:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        self.live += [writer.transport, up_writer.transport]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except OSError:
                pass
            finally:
                sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        for transport in self.live:
            transport.abort()
        self.live.clear()


async def main(url: str, api_key: str, prompt: str, drop_after: int) -> None:
    relay = None
    if drop_after:
        parts = urlsplit(url)
        relay = CuttingRelay(parts.hostname or "127.0.0.1", parts.port or 80)
        url = urlunsplit(parts._replace(netloc=f"127.0.0.1:{await relay.start()}"))
    resume: dict[str, str] = {}
    last_event_id: str | None = None

    def on_reconnecting(event: Any) -> dict[str, Any]:
        print(f"\n[connection lost ({event.close_code}); resuming]", file=sys.stderr)
        headers = {
            "X-Wsserver-Session": resume["session_id"],
            "X-Wsserver-Resume-Token": resume["resume_token"],
        }
        if last_event_id is not None:
            headers["X-Wsserver-Last-Event-Id"] = last_event_id
        return {"extra_headers": headers}

    client = AsyncOpenAI(api_key=api_key, base_url=url)
    deltas = 0
    async with client.realtime.connect(
        model="gpt-realtime", on_reconnecting=on_reconnecting
    ) as connection:
        async for event in connection:
            last_event_id = event.event_id  # the resume point: every id names one
            if event.type == "session.created":
                resume.update(event.resume)  # type: ignore[attr-defined]  # the extension
                await connection.session.update(
                    session={"type": "realtime", "output_modalities": ["text"]}
                )
                await connection.conversation.item.create(
                    item={
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": prompt}],
                    }
                )
                await connection.response.create()
            elif event.type == "response.output_text.delta":
                print(event.delta, end="", flush=True)
                deltas += 1
                if relay is not None and deltas == drop_after:
                    relay.cut()
            elif event.type == "error":
                print(f"\nerror: {event.error.code}: {event.error.message}", file=sys.stderr)
            elif event.type == "response.done":
                print(f"\n[{event.response.status}]")
                return


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765/v1", help="the server's /v1")
    parser.add_argument("--api-key", default="none", help="an API key (any with --auth none)")
    parser.add_argument("--prompt", default="Tell me about resuming sessions.")
    parser.add_argument(
        "--drop-after", type=int, default=0, help="cut the connection after N text deltas"
    )
    args = parser.parse_args()
    asyncio.run(main(args.url, args.api_key, args.prompt, args.drop_after))

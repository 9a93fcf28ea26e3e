"""A TCP relay that cuts the byte stream into arbitrary small pieces in both directions."""

from __future__ import annotations

import asyncio
import contextlib
import random


class ChoppingRelay:
    """Forwards loopback TCP, re-chunking every read into 1..max_piece byte writes."""

    def __init__(self, target_port: int, *, max_piece: int = 7, seed: int = 1) -> None:
        self.target_port = target_port
        self.max_piece = max_piece
        self.random = random.Random(seed)
        self.pieces = 0
        self.frozen: set[asyncio.StreamWriter] = set()
        self.refusing = False
        """While set, new connections are closed at once (a network with no route)."""
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def freeze(self) -> None:
        """Silently stop forwarding on every open connection (a half-open network path)."""
        self.frozen |= self._writers

    def cut(self) -> None:
        """Drop every open connection without a close frame (a network handoff)."""
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.transport.abort()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers |= {writer, up_writer}
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pump(src, dst))
            self._tasks.add(task)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                if dst in self.frozen:
                    continue
                view = memoryview(data)
                while view:
                    n = self.random.randint(1, self.max_piece)
                    dst.write(bytes(view[:n]))
                    view = view[n:]
                    self.pieces += 1
                    # Let the peer see the partial frame before the rest arrives.
                    await dst.drain()
                    if self.random.random() < 0.05:
                        await asyncio.sleep(0)
        finally:
            with contextlib.suppress(Exception):
                dst.close()

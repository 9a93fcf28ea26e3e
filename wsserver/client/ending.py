"""Ending a session on the server while the client is between connections.

A normal close (1000) ends a session at once, its running response included. A client
that closes while reconnecting has no connection to send it on; left alone, the server
would keep the session for its resume window and the response generating for its grace
period. So it connects once more, resumes, and closes that connection normally.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from protocol.audio_frame import is_audio_frame
from protocol.codes import ERROR_CODES, Disposition
from protocol.encoding import Codec
from protocol.errors import ProtocolError
from wsserver.client.handshake import Handshake, session_url


async def end_on_server(
    urls: Sequence[str],
    first: int,
    handshake: Handshake,
    codec: Codec,
    resume: dict[str, Any],
) -> None:
    """Resume on a fresh connection only to close it with 1000, within the close timeout.

    ``first``: the index in ``urls`` tried first (the one the next reconnect would use).
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(handshake.close_timeout):
            for offset in range(len(urls)):
                url = urls[(first + offset) % len(urls)]
                with contextlib.suppress(OSError, InvalidHandshake, ConnectionClosed):
                    if await _resume_and_end(url, handshake, codec, resume):
                        return


async def _resume_and_end(
    url: str, handshake: Handshake, codec: Codec, resume: dict[str, Any]
) -> bool:
    """Whether the server answered (ended the session, or has none to end)."""
    target = session_url(url, resume["session_id"])
    async with connect(target, **handshake.options(url)) as ws:
        await ws.send(codec.encode(resume))
        async for frame in ws:
            if isinstance(frame, bytes) and is_audio_frame(frame):
                continue
            try:
                message = codec.decode(frame)
            except ProtocolError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("type") == "session.ready":
                await ws.close(1000, "client closed")
                return True
            if message.get("type") == "error" and "seq" not in message:
                # Gone already, or not this worker's to end now (store down).
                info = ERROR_CODES.get(str(message.get("code")))
                return info is None or info.disposition is Disposition.TERMINAL
    return False

"""What the OpenAI-compatible speech clients share: endpoint settings and bounded reads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import httpx

from wsserver.engine.http_auth import bearer_header
from wsserver.engine.pipeline.errors import PipelineError
from wsserver.engine.pipeline.text import valid_text


@dataclass(frozen=True, slots=True)
class SpeechEndpoint:
    """An OpenAI-compatible speech server."""

    base_url: str
    """Up to and including ``/v1`` (``http://127.0.0.1:8000/v1``)."""
    model: str
    api_key: str = ""
    """Sent as ``Authorization: Bearer``; read from an environment variable, never logged."""
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    """Seconds the server may go without sending anything (a stalled answer fails); a
    whole call is bounded too (:meth:`call_seconds`)."""

    def call_seconds(self, work_seconds: float) -> float:
        """The most one whole call may take, ``work_seconds`` being what it is for.

        ``read_timeout`` bounds each read only: a server trickling a byte now and then
        would hold a call open forever. A call gets the time to connect, the server's
        allowed silence (``read_timeout``) and ``work_seconds`` on top (the length of
        the audio sent or asked for: a server slower than real time fails).
        """
        return self.connect_timeout + self.read_timeout + work_seconds

    def client(self) -> httpx.AsyncClient:
        """An HTTP client for this server (loopback or remote; no proxies from the env)."""
        timeout = httpx.Timeout(self.read_timeout, connect=self.connect_timeout)
        return httpx.AsyncClient(
            base_url=self.base_url.rstrip("/"),
            # Bodies are bounded as they arrive: a compressed one could grow a thousandfold
            # in one block before the bound sees it.
            headers={"Accept-Encoding": "identity", **bearer_header(self.api_key)},
            timeout=timeout,
            trust_env=False,
        )


def content_type(response: httpx.Response) -> str:
    """The media type of a response, lowercase, without parameters."""
    value: str = response.headers.get("content-type", "")
    return valid_text(value.split(";")[0].strip().lower())


def refuse_compressed(response: httpx.Response, error: type[PipelineError]) -> None:
    """Raise ``error`` for a body sent compressed although it was asked for without."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise error(f"speech server sent a {valid_text(encoding)[:40]!r}-encoded body")


async def blocks_until(response: httpx.Response, deadline: float) -> AsyncGenerator[bytes, None]:
    """The body's blocks as they come; ``TimeoutError`` once the loop's clock passes
    ``deadline`` (the wait for a block is cut there, never a yield)."""
    refuse_compressed(response, PipelineError)
    blocks = response.aiter_bytes()  # its stream ends with the response's aclose()
    while True:
        async with asyncio.timeout_at(deadline):
            try:
                block = await anext(blocks)
            except StopAsyncIteration:
                return
        yield block


async def read_bounded(response: httpx.Response, limit: int, error: type[PipelineError]) -> bytes:
    """The body, or ``error`` once it passes ``limit`` bytes (the rest is never read)."""
    refuse_compressed(response, error)
    body = bytearray()
    async for block in response.aiter_bytes():
        body += block
        if len(body) > limit:
            raise error(f"speech server sent more than {limit} bytes")
    return bytes(body)


async def failure_message(response: httpx.Response, what: str) -> str:
    """A clear message for a non-2xx answer: the status and the server's own message."""
    try:
        body = await read_bounded(response, 16_384, PipelineError)
    except PipelineError:
        body = b""
    detail = ""
    try:
        parsed: Any = json.loads(body)
        if isinstance(parsed, dict):
            inner = parsed.get("error", parsed)
            message = inner.get("message") if isinstance(inner, dict) else inner
            detail = str(message or parsed.get("detail") or "")
    except ValueError:
        detail = body.decode("utf-8", "replace")
    detail = " ".join(valid_text(detail).split())[:200]
    return f"{what} failed: http {response.status_code}" + (f": {detail}" if detail else "")

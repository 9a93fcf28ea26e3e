"""The OpenAI-compatible engine: a bounded number of upstream streams, a bounded queue.

``submit`` gives a request a place at once when fewer than ``max_concurrency`` stream,
else queues it (``EngineOverloaded`` past ``max_queue``); an abort frees its place at
once. One HTTP client is shared; a stream that is aborted closes its own connection
(an unread response is never returned to the pool), which is what tells the upstream to
stop.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque

import httpx

from protocol.generation import GenerationRequest
from wsserver.engine.base import EngineOverloaded, GenerationSink
from wsserver.engine.http_auth import bearer_header
from wsserver.engine.openai.config import OpenAIEngineConfig
from wsserver.engine.openai.generation import OpenAIGeneration

log = logging.getLogger(__name__)


class OpenAICompatibleEngine:
    """Streams ``/chat/completions`` from one upstream server."""

    def __init__(self, config: OpenAIEngineConfig) -> None:
        self.config = config
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self._client: httpx.AsyncClient | None = None
        self._running: set[OpenAIGeneration] = set()
        self._queue: deque[OpenAIGeneration] = deque()
        self._counters = {
            "requests": 0,
            "retries": 0,
            "aborted": 0,
            "failures": 0,
            "tokens_generated": 0,
        }

    @property
    def client(self) -> httpx.AsyncClient:
        """The shared HTTP client (opened by :meth:`start`)."""
        if self._client is None:
            raise RuntimeError("the openai engine is not started")
        return self._client

    async def start(self) -> None:
        if self._client is not None:
            return
        config = self.config
        # The stream is read raw (aiter_raw, bounded): ask for it uncompressed.
        headers = {
            "Accept": "text/event-stream",
            "Accept-Encoding": "identity",
            **bearer_header(config.api_key),
        }
        # Read timeouts are the generation's own (first token, between chunks): httpx's
        # would count prefill as silence.
        timeout = httpx.Timeout(
            connect=config.connect_timeout, read=None, write=config.connect_timeout, pool=None
        )
        limits = httpx.Limits(
            max_connections=config.max_concurrency, max_keepalive_connections=config.max_concurrency
        )
        self._client = httpx.AsyncClient(
            headers=headers, timeout=timeout, limits=limits, trust_env=False
        )

    async def close(self) -> None:
        tasks = [g.task for g in self._running if g.task is not None]
        for generation in [*self._running, *self._queue]:
            generation.abort()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def submit(self, request: GenerationRequest, sink: GenerationSink) -> OpenAIGeneration:
        config = self.config
        if len(self._running) >= config.max_concurrency and len(self._queue) >= config.max_queue:
            raise EngineOverloaded(f"upstream queue is full ({config.max_queue} waiting)")
        generation = OpenAIGeneration(self, request, sink)
        self._counters["requests"] += 1
        self._queue.append(generation)
        self._admit()
        return generation

    def stats(self) -> dict[str, int]:
        return {
            "active": len(self._running),
            "queued": len(self._queue),
            "slots": self.config.max_concurrency,
            **self._counters,
        }

    # Called by the generations.

    def release(self, generation: OpenAIGeneration) -> None:
        """Free the generation's place (idempotent) and let the next one in."""
        if generation in self._running:
            self._running.discard(generation)
        else:
            with contextlib.suppress(ValueError):
                self._queue.remove(generation)
        self._admit()

    def aborted(self, generation: OpenAIGeneration) -> None:
        """An abort: counted, and its place freed at once."""
        self._counters["aborted"] += 1
        self.release(generation)

    def retried(self) -> None:
        """One more attempt before a first token."""
        self._counters["retries"] += 1

    def failed(self) -> None:
        """A request that ended ``upstream_error`` or ``upstream_timeout``."""
        self._counters["failures"] += 1

    def counted(self, tokens: int) -> None:
        """Tokens pushed to a sink."""
        self._counters["tokens_generated"] += tokens

    def _admit(self) -> None:
        while self._queue and len(self._running) < self.config.max_concurrency:
            generation = self._queue.popleft()
            self._running.add(generation)
            generation.start()

"""One request streamed from the upstream: attempts, timeouts, output into the sink.

A task reads the response stream and calls the sink as each chunk arrives (no hop per
token). Before the first token a failure may be retried; after it, the generation
ends with ``upstream_error`` or ``upstream_timeout`` (the client keeps what it got
and may ``response.continue``). ``abort()`` cancels the task: the stream's connection
is closed, not returned to the pool, so the upstream sees the disconnect and frees the
request; nothing more reaches the sink.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from typing import Protocol

import httpx

from protocol.generation import FinishReason, GenerationRequest, OutputChunk, ToolCallFragment
from wsserver.engine.base import GenerationSink
from wsserver.engine.openai.chunks import DONE, ChunkDelta, parse_chunk
from wsserver.engine.openai.config import OpenAIEngineConfig
from wsserver.engine.openai.errors import UpstreamFailure, UpstreamProtocolError, UpstreamTimeout
from wsserver.engine.openai.http_errors import not_a_stream, status_failure, transport_failure
from wsserver.engine.openai.messages import request_body
from wsserver.engine.openai.sse import SSEParser
from wsserver.engine.openai.tool_calls import ToolCallAssembler

log = logging.getLogger(__name__)

_LENGTH_SLACK = 4
"""Deltas past the output cap before an upstream that ignores ``max_tokens`` is cut."""
_CHARS_PER_TOKEN = 128
"""Text allowed per token of the cap (a token is a few characters; servers under load
merge several tokens into one delta): past it an upstream is sending something else."""
_IDLE_EVENTS = 64
"""Events that carry nothing (a role, an empty delta) allowed beyond one per token of
the cap: an upstream that sends only those is stuck or hostile."""


class GenerationHost(Protocol):
    """What a generation needs of its engine: the client, and where to report."""

    config: OpenAIEngineConfig
    url: str

    @property
    def client(self) -> httpx.AsyncClient:
        """The shared HTTP client."""
        ...

    def release(self, generation: OpenAIGeneration) -> None:
        """The generation ended: free its place."""
        ...

    def aborted(self, generation: OpenAIGeneration) -> None:
        """The generation was aborted."""
        ...

    def retried(self) -> None:
        """Another attempt is made."""
        ...

    def failed(self) -> None:
        """The generation failed."""
        ...

    def counted(self, tokens: int) -> None:
        """Tokens went to a sink."""
        ...


class _SinkFailed(Exception):
    """The sink raised: the request is over (already told ``ERROR``)."""


class _Ended(Exception):
    """The stream said everything it will say."""


def estimate_tokens(request: GenerationRequest) -> int:
    """Prompt tokens before the upstream counts them: about four characters a token."""
    return sum(len(turn.text) // 4 + 4 for turn in request.prompt) + len(request.prefix) // 4


class OpenAIGeneration:
    """A request to the upstream, from its place in the queue to its finish."""

    def __init__(
        self, engine: GenerationHost, request: GenerationRequest, sink: GenerationSink
    ) -> None:
        self._engine = engine
        self.request = request
        self._sink = sink
        self._input_tokens = estimate_tokens(request)
        self._counted = 0
        self._chars = 0
        """Deltas pushed (one token each, until the upstream's usage says otherwise)."""
        self._usage_tokens: int | None = None
        self._finish: FinishReason | None = None
        self._started = False
        """Output reached the sink: from here on, no retry."""
        self._thinking = False
        """Reasoning arrived: the first-token deadline gives way to the chunk timeout."""
        self._progressed = False
        """An event said something since the deadline was last moved."""
        self._events = 0
        """Events of the attempt that carried no text and no call (role, reasoning, empty)."""
        self._upstream_finish: str | None = None
        digest = hashlib.sha256(request.request_id.encode()).hexdigest()[:16]
        self._tools = ToolCallAssembler(f"call_{digest}", engine.config.max_tool_arguments_bytes)
        self.task: asyncio.Task[None] | None = None
        self.failure: str | None = None
        """Why it failed, when it did (the upstream's message, cleaned)."""

    @property
    def input_tokens(self) -> int:
        return self._input_tokens

    @property
    def generated_tokens(self) -> int:
        return self._usage_tokens if self._usage_tokens is not None else self._counted

    @property
    def finish_reason(self) -> FinishReason | None:
        return self._finish

    def abort(self) -> None:
        if self._finish is not None:
            return
        self._finish = FinishReason.ABORTED
        self._engine.aborted(self)
        if self.task is not None:
            # Cancelling closes the stream's connection at the task's next step.
            self.task.cancel()

    def start(self) -> None:
        """Begin streaming (the engine gave this request a place)."""
        self.task = asyncio.create_task(self._run(), name=f"upstream-{self.request.request_id}")

    async def _run(self) -> None:
        config = self._engine.config
        attempt = 0
        try:
            while True:
                try:
                    await self._attempt()
                    self._end(self._finish_of_stream())
                    return
                except UpstreamFailure as failure:
                    if self._started or not failure.retryable or attempt >= config.retries:
                        raise
                    delay = min(config.backoff_base * 2**attempt, config.backoff_max)
                    if failure.retry_after is not None:
                        if failure.retry_after > config.backoff_max:
                            raise
                        delay = max(delay, failure.retry_after)
                    attempt += 1
                    self._engine.retried()
                    log.info(
                        "upstream attempt %d of %s failed (%s); retrying in %.2f s",
                        attempt,
                        self.request.request_id,
                        failure,
                        delay,
                    )
                    await asyncio.sleep(delay)
        except UpstreamFailure as failure:
            self.failure = str(failure)
            log.warning("upstream request %s failed: %s", self.request.request_id, failure)
            self._engine.failed()
            self._end(failure.finish_reason)
        except _SinkFailed:
            pass
        except Exception:
            # A bug here must still end the request for its owner (a response gets its done).
            log.exception("upstream request %s broke", self.request.request_id)
            self._end(FinishReason.ERROR)
        except asyncio.CancelledError:
            if self._finish is None:
                # Cancelled by the engine closing, not by abort(): still say it ended.
                self._end(FinishReason.ERROR)
            raise
        finally:
            self._engine.release(self)

    async def _attempt(self) -> None:
        engine = self._engine
        config = engine.config
        loop = asyncio.get_running_loop()
        self._tools_reset_if_unstarted()
        parser = SSEParser(config.max_line_bytes)
        try:
            async with asyncio.timeout_at(loop.time() + config.first_token_timeout) as deadline:
                async with engine.client.stream(
                    "POST", engine.url, json=request_body(self.request, config)
                ) as response:
                    if response.status_code != 200:
                        raise await status_failure(response, config.api_key)
                    if "text/event-stream" not in response.headers.get("content-type", ""):
                        raise not_a_stream(response)
                    try:
                        async for raw in response.aiter_raw():
                            for data in parser.feed(raw):
                                self._event(data)
                            # Only an event moves the deadline: keep-alive comments and a
                            # line trickling in byte by byte are silence.
                            if self._progressed and (self._started or self._thinking):
                                self._progressed = False
                                deadline.reschedule(loop.time() + config.chunk_timeout)
                        for data in parser.close():
                            self._event(data)
                    except _Ended:
                        return
        except TimeoutError as exc:
            what = "the next chunk" if self._started else "the first token"
            raise UpstreamTimeout(
                f"upstream sent nothing for {what} in time", retryable=not self._started
            ) from exc
        except httpx.HTTPError as exc:
            raise transport_failure(exc, config.api_key) from exc
        if self._upstream_finish is None:
            raise UpstreamFailure(
                "upstream closed the stream before the answer ended", retryable=True
            )

    def _tools_reset_if_unstarted(self) -> None:
        if not self._started:
            digest = hashlib.sha256(self.request.request_id.encode()).hexdigest()[:16]
            self._tools = ToolCallAssembler(
                f"call_{digest}", self._engine.config.max_tool_arguments_bytes
            )
            self._upstream_finish = None
            self._usage_tokens = None
            self._thinking = False
            self._events = 0

    def _event(self, data: str) -> None:
        if data == DONE:
            raise _Ended
        delta = parse_chunk(data, self._engine.config.api_key)
        self._progressed = True
        self._take(delta)

    def _take(self, delta: ChunkDelta) -> None:
        if delta.prompt_tokens is not None:
            self._input_tokens = delta.prompt_tokens
        cap = self.request.max_output_tokens + _LENGTH_SLACK
        if delta.completion_tokens is not None:
            # Not more than was asked for: a count past it is not believed.
            self._usage_tokens = min(delta.completion_tokens, cap)
        if delta.thinking:
            self._thinking = True
        if self._upstream_finish is not None:
            return  # after its finish an answer says nothing more (only its usage counts)
        if not delta.content and delta.tool_calls is None:
            # Reasoning counts against the cap as servers count it (and a model that
            # reasons forever is cut); so do events that say nothing at all.
            self._events += 1
            if self._events > cap + _IDLE_EVENTS:
                self._upstream_finish = "length"
                raise _Ended
        if delta.content:
            self._chars += len(delta.content)
            if self._chars > (self.request.max_output_tokens + _LENGTH_SLACK) * _CHARS_PER_TOKEN:
                raise UpstreamProtocolError("upstream sent more text than its token cap allows")
            self._push(OutputChunk(delta.content, 1))
        if delta.tool_calls is not None:
            fragments = self._tools.feed(delta.tool_calls)
            self._push_fragments(fragments, 1)
        if delta.finish_reason is not None:
            self._upstream_finish = delta.finish_reason
        if self._counted > self.request.max_output_tokens + _LENGTH_SLACK:
            # An upstream that ignores max_tokens is cut here, not streamed forever.
            self._upstream_finish = "length"
            raise _Ended

    def _push_fragments(self, fragments: list[ToolCallFragment], tokens: int) -> None:
        # One token for the chunk that carried them, on its first piece of arguments.
        for fragment in fragments:
            cost = 0
            if not fragment.complete:
                cost, tokens = tokens, 0
            self._push(OutputChunk("", cost, tool_call=fragment))

    def _push(self, chunk: OutputChunk) -> None:
        if self._finish is not None:
            return
        self._started = True
        self._counted += chunk.tokens
        self._engine.counted(chunk.tokens)
        try:
            self._sink.on_output(chunk)
        except Exception as exc:
            log.exception("output of %s failed; aborting it", self.request.request_id)
            self.abort()
            with contextlib.suppress(Exception):
                self._sink.on_finish(FinishReason.ERROR)
            raise _SinkFailed from exc

    def _finish_of_stream(self) -> FinishReason:
        upstream = self._upstream_finish
        if upstream == "length":
            return FinishReason.LENGTH
        if self._tools.any:
            # Some models end a tool-calling turn with "stop": the calls are what count.
            self._push_fragments(self._tools.finish(), 0)
            return FinishReason.TOOL_CALLS
        return FinishReason.STOP

    def _end(self, reason: FinishReason) -> None:
        if self._finish is not None:
            return
        self._finish = reason
        if self._usage_tokens is not None and self._usage_tokens > self._counted:
            # The engine's counter follows the upstream's own count where it gave one.
            self._engine.counted(self._usage_tokens - self._counted)
        with contextlib.suppress(Exception):
            self._sink.on_finish(reason)

"""Failures at the upstream: retries before the first token, timeouts, hostile streams.

Each case runs the real engine against a real loopback stand-in that answers as a broken
or slow upstream would; every one ends with one finish that says why, and no hung task.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from protocol.generation import FinishReason
from tests.processes import eventually
from tests.redis_server import free_port
from tests.wsserver.engine.openai.running import ask, openai_engine, run
from tests.wsserver.engine.openai.standin import Reply, StandIn, events_of, recorded
from wsserver.engine.base import QueueSink

TEXT = events_of(recorded("llamacpp_text.sse"))
"""The recorded answer "The capital of France is Paris." (7 deltas, 8 tokens)."""
FIRST_TOKEN = 2
"""Events up to and including the first text delta (the role chunk comes first)."""


def _delta(text: str) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def _against(replies: list[Reply], **options: object) -> tuple[object, StandIn]:
    server = await StandIn(replies).start()
    try:
        async with openai_engine(server.base_url, **options) as engine:
            outcome = await run(engine, ask())
            outcome.stats = engine.stats()  # type: ignore[attr-defined]
    finally:
        await server.stop()
    return outcome, server


async def test_a_refused_connection_is_retried_until_the_upstream_is_up() -> None:
    port = free_port()
    async with openai_engine(f"http://127.0.0.1:{port}/v1", retries=20) as engine:
        sink = QueueSink()
        generation = engine.submit(ask(), sink)
        # Nothing listens yet: the first attempt fails, a retry is scheduled.
        await eventually(lambda: engine.stats()["retries"] >= 1, timeout=10)
        server = await StandIn([Reply(TEXT)], port=port).start()
        try:
            chunks = [c async for c in sink.chunks(timeout=30)]
        finally:
            await server.stop()
    assert sink.finish_reason is FinishReason.STOP
    assert "".join(c.text for c in chunks) == "The capital of France is Paris."
    assert generation.generated_tokens == 8


@pytest.mark.parametrize("status", [500, 502, 503, 429])
async def test_a_passing_failure_before_the_first_token_is_retried(status: int) -> None:
    refused = Reply([b'{"error": {"message": "busy"}}'], status, {"Retry-After": "0.05"})
    outcome, server = await _against([refused, Reply(TEXT)])
    assert outcome.finish is FinishReason.STOP  # type: ignore[attr-defined]
    assert len(server.requests) == 2
    assert outcome.stats["retries"] == 1  # type: ignore[attr-defined]


async def test_retries_are_bounded() -> None:
    outcome, server = await _against([Reply([b"no"], 503)], retries=2)
    assert outcome.finish is FinishReason.UPSTREAM_ERROR  # type: ignore[attr-defined]
    assert len(server.requests) == 3
    assert "upstream answered 503" in (outcome.generation.failure or "")  # type: ignore[attr-defined]


async def test_a_retry_after_past_the_cap_fails_at_once() -> None:
    outcome, server = await _against([Reply([b"{}"], 429, {"Retry-After": "3600"})])
    assert outcome.finish is FinishReason.UPSTREAM_ERROR  # type: ignore[attr-defined]
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_a_client_error_fails_at_once_with_the_upstreams_message(status: int) -> None:
    key = "sk-secret-value-1234"
    body = json.dumps({"error": {"message": f"bad key {key}\n\x1b[31m" + "x" * 5000}}).encode()
    outcome, server = await _against([Reply([body], status)], api_key=key)
    assert outcome.finish is FinishReason.UPSTREAM_ERROR  # type: ignore[attr-defined]
    assert len(server.requests) == 1, "a 4xx that won't get better is not retried"
    assert server.headers[0]["authorization"] == f"Bearer {key}"
    failure = outcome.generation.failure or ""  # type: ignore[attr-defined]
    assert failure.startswith(f"upstream answered {status}: bad key [redacted]")
    assert key not in failure and "\x1b" not in failure and len(failure) < 400


async def test_no_first_token_in_time_is_retried_then_a_timeout() -> None:
    stalls = Reply([TEXT[0], 3600.0])  # the role chunk, then silence
    outcome, server = await _against([stalls], first_token_timeout=0.3, retries=1)
    assert outcome.finish is FinishReason.UPSTREAM_TIMEOUT  # type: ignore[attr-defined]
    assert outcome.chunks == []  # type: ignore[attr-defined]
    assert len(server.requests) == 2


async def test_silence_between_chunks_is_a_timeout_after_the_first_token() -> None:
    stalls = Reply([*TEXT[:FIRST_TOKEN], 3600.0])
    outcome, server = await _against([stalls], chunk_timeout=0.3)
    assert outcome.finish is FinishReason.UPSTREAM_TIMEOUT  # type: ignore[attr-defined]
    assert outcome.text == "The"  # type: ignore[attr-defined]
    assert len(server.requests) == 1, "never retried once output was sent"


HOSTILE = {
    "invalid json": [*TEXT[:FIRST_TOKEN], b"data: {not json\n\n"],
    "a line that never ends": [*TEXT[:FIRST_TOKEN], *[b"data: " + b"x" * 65536] * 40],
    "invalid utf-8": [*TEXT[:FIRST_TOKEN], b'data: {"choices": "\xff\xfe"}\n\n'],
    "an error event": [*TEXT[:FIRST_TOKEN], b'data: {"error": {"message": "oom"}}\n\n'],
    "no finish before the end": TEXT[:FIRST_TOKEN],
    "choices of the wrong type": [*TEXT[:FIRST_TOKEN], b'data: {"choices": [7]}\n\n'],
    "huge tool arguments": [
        b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c",'
        b' "function": {"name": "f", "arguments": "{"}}]}}]}\n\n',
        *[
            b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": '
            b'{"arguments": "' + b"x" * 60000 + b'"}}]}}]}\n\n'
        ]
        * 40,
    ],
}


@pytest.mark.parametrize("name", HOSTILE)
async def test_a_hostile_stream_fails_with_upstream_error(name: str) -> None:
    outcome, _ = await _against([Reply(HOSTILE[name])], max_line_bytes=1 << 20, retries=0)
    assert outcome.finish is FinishReason.UPSTREAM_ERROR  # type: ignore[attr-defined]
    assert outcome.stats["failures"] == 1  # type: ignore[attr-defined]
    assert outcome.generation.failure  # type: ignore[attr-defined]


async def test_a_reset_mid_answer_fails_and_one_before_the_answer_is_retried() -> None:
    mid = Reply(TEXT[:FIRST_TOKEN], end="reset")
    outcome, _ = await _against([mid])
    assert outcome.finish is FinishReason.UPSTREAM_ERROR  # type: ignore[attr-defined]
    assert outcome.text == "The"  # type: ignore[attr-defined]
    early = Reply(TEXT[:1], end="reset")
    outcome, server = await _against([early, Reply(TEXT)])
    assert outcome.finish is FinishReason.STOP  # type: ignore[attr-defined]
    assert len(server.requests) == 2


async def test_a_200_that_is_an_html_page_fails_at_once() -> None:
    page = Reply([b"<html><body>Bad gateway</body></html>"], 200, {"Content-Type": "text/html"})
    outcome, server = await _against([page])
    assert outcome.finish is FinishReason.UPSTREAM_ERROR  # type: ignore[attr-defined]
    assert "text/html" in (outcome.generation.failure or "")  # type: ignore[attr-defined]
    assert len(server.requests) == 1


async def test_an_upstream_that_ignores_max_tokens_is_cut() -> None:
    endless = Reply([TEXT[0], *[_delta(" word")] * 200], end="hang")
    outcome, _ = await _against([endless])
    assert outcome.finish is FinishReason.LENGTH  # type: ignore[attr-defined]
    assert len(outcome.chunks) <= 16 + 5  # type: ignore[attr-defined]


async def test_abort_closes_the_connection_and_reports_nothing() -> None:
    server = await StandIn([Reply([*TEXT[:FIRST_TOKEN]], end="hang")]).start()
    try:
        async with openai_engine(server.base_url) as engine:
            sink = QueueSink()
            generation = engine.submit(ask(), sink)
            first = await anext(aiter(sink.chunks(timeout=10)))
            assert first.text == "The"
            generation.abort()
            # The stand-in sees its connection end: it was closed, not kept in a pool.
            await eventually(lambda: server.disconnects == 1, timeout=10)
            await asyncio.sleep(0.05)
            assert sink.finish_reason is None
            assert generation.finish_reason is FinishReason.ABORTED
            assert engine.stats()["active"] == 0
    finally:
        await server.stop()

"""Hostile upstreams found by the issue-12 attack (each test reproduces one finding).

A real loopback stand-in answers as a broken or hostile upstream would; each case must end
with one finish that says why, within the configured timeouts, and nothing unsafe may
reach the session (text that cannot be encoded, counts that cannot be encoded) or the log
(the API key, control characters).
"""

from __future__ import annotations

import asyncio
import json
import logging
import zlib
from collections.abc import Sequence
from typing import Any

import pytest

from protocol.generation import FinishReason
from tests.wsserver.engine.openai.running import Outcome, ask, openai_engine, run
from tests.wsserver.engine.openai.standin import Reply, StandIn, events_of, recorded

TEXT = events_of(recorded("llamacpp_text.sse"))
FIRST_TOKEN = 2
"""Events up to and including the first text delta (the role chunk comes first)."""
KEY = "sk-attack-marker-5f1c9e"


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def _against(body: Sequence[bytes | float], **options: Any) -> Outcome:
    server = await StandIn([Reply(body)]).start()
    try:
        async with openai_engine(server.base_url, retries=0, **options) as engine:
            return await run(engine, ask(max_tokens=64), timeout=20)
    finally:
        await server.stop()


@pytest.mark.parametrize(
    "filler",
    [
        pytest.param([b": keep-alive\n\n", 0.05] * 800, id="keep-alive comments"),
        pytest.param([b"d", 0.05] * 800, id="one byte at a time, never an event"),
    ],
)
async def test_a_stream_that_sends_no_event_after_the_first_token_times_out(
    filler: list[bytes | float],
) -> None:
    # Found: every byte rescheduled the chunk deadline, so a proxy's keep-alive comments
    # (or a slowloris) held the generation and its place forever (the docs: "seconds the
    # stream may stay silent between two chunks").
    outcome = await _against([*TEXT[:FIRST_TOKEN], *filler], chunk_timeout=0.5)
    assert outcome.finish is FinishReason.UPSTREAM_TIMEOUT


async def test_an_in_stream_error_is_logged_clean_and_without_the_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Found: a mid-stream {"error": ...} event was logged raw: the key, a forged log line.
    message = f"bad key {KEY}\nCRITICAL root: forged line \x1b[31m" + "A" * 5000
    error = b"data: " + json.dumps({"error": {"message": message}}).encode() + b"\n\n"
    with caplog.at_level(logging.INFO):
        outcome = await _against([*TEXT[:FIRST_TOKEN], error], api_key=KEY)
    assert outcome.finish is FinishReason.UPSTREAM_ERROR
    failure = outcome.generation.failure or ""
    assert KEY not in failure and "\n" not in failure and "\x1b" not in failure
    assert len(failure) < 1000
    for record in caplog.records:
        text = record.getMessage()
        assert KEY not in text and "\n" not in text, text[:200]


async def test_a_lone_surrogate_never_reaches_the_session() -> None:
    # Found: "\ud800" is valid JSON; it went to the session as text no codec can write, and
    # the client's connection was closed 1011 (internal error) on every such answer.
    bad = b'data: {"choices": [{"index": 0, "delta": {"content": "a \\ud800 b"}}]}\n\n'
    outcome = await _against([*TEXT[:FIRST_TOKEN], bad, _chunk({}, "stop")])
    for chunk in outcome.chunks:
        chunk.text.encode("utf-8")  # raises on a surrogate


@pytest.mark.parametrize("count", [10**30, 2**64])
async def test_usage_counts_past_any_real_answer_are_not_believed(count: int) -> None:
    # Found: usage went to response.done and /stats as sent; past 2**64 the msgpack codec
    # cannot encode response.done and the client's connection is closed 1011.
    usage = {"usage": {"prompt_tokens": count, "completion_tokens": count}}
    body = [
        *TEXT[:FIRST_TOKEN],
        _chunk({}, "stop"),
        b"data: " + json.dumps(usage).encode() + b"\n\n",
    ]
    outcome = await _against(body)
    assert outcome.generation.generated_tokens < 2**63
    assert outcome.generation.input_tokens < 2**63


async def test_two_calls_with_one_id_fail_the_response() -> None:
    # Found: both reached the client as two response.tool_call events with the same
    # call_id; results are keyed by call id, so the second can never be answered.
    def call(index: int) -> bytes:
        entry = {"index": index, "id": "same", "type": "function"}
        entry["function"] = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
        return _chunk({"tool_calls": [entry]})

    outcome = await _against([call(0), call(1), _chunk({}, "tool_calls")])
    assert outcome.finish is FinishReason.UPSTREAM_ERROR


async def test_thousands_of_calls_in_one_turn_fail_the_response() -> None:
    # Found: calls per turn are unbounded and assembling them is quadratic: 40,000 calls
    # (five chunks under the line bound) held the worker's event loop for over a minute,
    # and 8,000 closed the client as a slow consumer.
    entries = [
        {
            "index": i,
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "f", "arguments": "{}"},
        }
        for i in range(3000)
    ]
    outcome = await _against([_chunk({"tool_calls": entries}), _chunk({}, "tool_calls")])
    assert outcome.finish is FinishReason.UPSTREAM_ERROR
    assert len(outcome.calls()) <= 256


async def test_reasoning_that_never_ends_is_cut() -> None:
    # Found: reasoning text counts toward no cap and resets the deadline, so a model that
    # reasons forever (or an upstream that says it does) holds the request forever.
    reasoning = _chunk({"reasoning_content": "hmm " * 1000})
    body: list[bytes | float] = [TEXT[0]]
    for _ in range(5000):
        body += [reasoning, 0.01]
    outcome = await _against(body, chunk_timeout=0.5)
    assert outcome.finish in {FinishReason.UPSTREAM_ERROR, FinishReason.LENGTH}


async def test_the_stand_in_finishes_cleanly() -> None:
    # The control case: the same helper, a well-formed answer.
    outcome = await _against(TEXT)
    assert outcome.finish is FinishReason.STOP
    await asyncio.sleep(0)


async def test_a_stream_is_never_asked_for_in_a_compression_it_is_read_without() -> None:
    # Found: the client advertised "Accept-Encoding: gzip, deflate" (httpx's default) but
    # reads the stream undecoded, so an upstream or proxy that honours it (nginx with
    # gzip on for text/event-stream) failed every request ("not utf-8").
    compressor = zlib.compressobj(wbits=31)
    gzipped = compressor.compress(b"".join(TEXT)) + compressor.flush()
    gzip_headers = {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}
    server = await StandIn([Reply([gzipped], headers=gzip_headers)]).start()
    try:
        async with openai_engine(server.base_url, retries=0) as engine:
            outcome = await run(engine, ask(max_tokens=64), timeout=20)
    finally:
        await server.stop()
    accepted = server.headers[0].get("accept-encoding", "")
    if "gzip" in accepted:
        # It asked for gzip: it must read gzip (this stand-in always compresses).
        assert outcome.finish is FinishReason.STOP
        assert outcome.text == "The capital of France is Paris."


async def test_text_after_the_finish_is_not_delivered() -> None:
    # Found: content sent after finish_reason reached the client as part of the answer.
    after = _chunk({"content": " and more after the end"})
    outcome = await _against([*TEXT[:FIRST_TOKEN], _chunk({}, "stop"), after])
    assert outcome.finish is FinishReason.STOP
    assert "after the end" not in "".join(chunk.text for chunk in outcome.chunks)

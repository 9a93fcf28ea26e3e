"""Tool calls assembled from the shapes llama.cpp, vLLM and Ollama stream.

The recorded streams are replayed byte for byte by a real loopback HTTP server and read
by the real engine; the assembler's own edge cases are fed directly.
"""

from __future__ import annotations

import json

import pytest

from protocol.generation import FinishReason, ToolCallFragment
from tests.wsserver.engine.openai.running import WEATHER, ask, openai_engine, run
from tests.wsserver.engine.openai.standin import Reply, StandIn, events_of, recorded
from wsserver.engine.openai.errors import UpstreamProtocolError
from wsserver.engine.openai.tool_calls import ToolCallAssembler

SET_LIGHT = {"name": "set_light", "parameters": {"type": "object"}}


async def _replay(name: str, tool: dict[str, object], step: int = 0) -> object:
    data = recorded(name)
    body = events_of(data) if step == 0 else [data[i : i + step] for i in range(0, len(data), step)]
    server = await StandIn([Reply(body)]).start()
    try:
        async with openai_engine(server.base_url) as engine:
            return await run(engine, ask("x", 64, tools=(tool,)))
    finally:
        await server.stop()


@pytest.mark.parametrize("step", [0, 5])
async def test_llama_cpp_recorded_call(step: int) -> None:
    outcome = await _replay("llamacpp_tool_call.sse", SET_LIGHT, step)
    assert outcome.finish is FinishReason.TOOL_CALLS
    ((call_id, name, arguments),) = outcome.calls()
    assert (call_id, name) == ("hQaqSidqgs2u4isZxi5YpUHgHIT1JBbM", "set_light")
    assert json.loads(arguments) == {"room": "kitchen", "on": True}
    assert outcome.fragments[-1].complete
    # Usage from the final chunk: the call cost 30 tokens, not the 13 pieces streamed.
    assert (outcome.generation.input_tokens, outcome.generation.generated_tokens) == (302, 30)


async def test_vllm_name_and_arguments_in_one_chunk_and_arguments_in_the_finish() -> None:
    outcome = await _replay("vllm_tool_calls.sse", WEATHER)
    assert outcome.finish is FinishReason.TOOL_CALLS
    calls = outcome.calls()
    assert [(cid, name, json.loads(args)) for cid, name, args in calls] == [
        ("chatcmpl-tool-3b6f0c1d2e", "get_weather", {"city": "Paris"}),
        ("chatcmpl-tool-8a1e4f5b6c", "get_weather", {"city": "London"}),
    ]
    # The first call is complete before the second starts (the core validates it then).
    kinds = [(f.call_id, f.complete) for f in outcome.fragments]
    first_ends = kinds.index(("chatcmpl-tool-3b6f0c1d2e", True))
    assert first_ends < kinds.index(("chatcmpl-tool-8a1e4f5b6c", False))
    assert outcome.generation.generated_tokens == 38


async def test_ollama_whole_calls_without_index_ending_with_stop() -> None:
    outcome = await _replay("ollama_tool_calls.sse", WEATHER)
    # "stop", but calls were made: a tool-calling turn.
    assert outcome.finish is FinishReason.TOOL_CALLS
    assert [(cid, json.loads(args)) for cid, _, args in outcome.calls()] == [
        ("call_k3v9x2pq", {"city": "Paris"}),
        ("call_m7w1z8rt", {"city": "London"}),
    ]
    # No usage chunk: the tokens are counted, one per chunk that carried a call.
    assert outcome.generation.generated_tokens == 2


async def test_vllm_usage_on_every_chunk_keeps_the_last() -> None:
    outcome = await _replay("vllm_text_continuous_usage.sse", WEATHER)
    assert outcome.finish is FinishReason.STOP
    assert outcome.text == "Paris is the capital."
    assert (outcome.generation.input_tokens, outcome.generation.generated_tokens) == (19, 6)


def _fragments(assembler: ToolCallAssembler, *chunks: list[object]) -> list[ToolCallFragment]:
    out: list[ToolCallFragment] = []
    for entries in chunks:
        out += assembler.feed(entries)
    return out + assembler.finish()


def test_arguments_before_the_name_wait_for_it() -> None:
    out = _fragments(
        ToolCallAssembler("call_x"),
        [{"index": 0, "function": {"arguments": '{"a"'}}],
        [{"index": 0, "function": {"arguments": ": 1"}}],
        [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "}"}}],
    )
    assert out == [
        ToolCallFragment("c1", "f", '{"a": 1}'),
        ToolCallFragment("c1", "f", complete=True),
    ]


def test_an_unindexed_entry_without_id_or_name_continues_the_latest_call() -> None:
    out = _fragments(
        ToolCallAssembler("call_x"),
        [{"id": "a", "function": {"name": "f", "arguments": '{"x": '}}],
        [{"function": {"arguments": "1}"}}],
        [{"id": "b", "function": {"name": "g", "arguments": "{}"}}],
    )
    assert out == [
        ToolCallFragment("a", "f", '{"x": '),
        ToolCallFragment("a", "f", "1}"),
        ToolCallFragment("a", "f", complete=True),
        ToolCallFragment("b", "g", "{}"),
        ToolCallFragment("b", "g", complete=True),
    ]


def test_a_call_without_id_gets_one_and_object_arguments_become_json() -> None:
    out = _fragments(
        ToolCallAssembler("call_x"), [{"function": {"name": "f", "arguments": {"a": 1}}}]
    )
    assert out == [
        ToolCallFragment("call_x_0", "f", '{"a": 1}'),
        ToolCallFragment("call_x_0", "f", complete=True),
    ]


@pytest.mark.parametrize(
    ("chunks", "problem"),
    [
        ([[{"index": 0, "function": {"arguments": "{}"}}]], "without a name"),
        ([{"index": 0}], "not a list"),
        ([["nope"]], "not an object"),
        ([[{"index": "0", "function": {"name": "f"}}]], "index that is not an integer"),
        (
            [
                [{"index": 0, "id": "a", "function": {"name": "f"}}],
                [{"index": 1, "id": "b", "function": {"name": "g"}}],
                [{"index": 0, "function": {"arguments": "{}"}}],
            ],
            "after it ended",
        ),
    ],
)
def test_broken_calls_are_refused(chunks: list[object], problem: str) -> None:
    with pytest.raises(UpstreamProtocolError, match=problem):
        _fragments(ToolCallAssembler("call_x"), *chunks)  # type: ignore[arg-type]


def test_huge_arguments_are_refused_at_the_bound() -> None:
    assembler = ToolCallAssembler("call_x", max_arguments_bytes=1000)
    assembler.feed([{"index": 0, "id": "a", "function": {"name": "f"}}])
    with pytest.raises(UpstreamProtocolError, match="longer than 1000"):
        for _ in range(20):
            assembler.feed([{"index": 0, "function": {"arguments": "x" * 100}}])


@pytest.mark.parametrize("odd", ["a\nb\x00", "x" * 129, "caf\u00e9", ""])
def test_an_id_that_cannot_name_a_call_is_replaced_by_ours(odd: str) -> None:
    # Ids reach the client's events (and an error's text); a control character, a huge
    # id or one a client could not type back is not passed on.
    out = _fragments(
        ToolCallAssembler("call_x"), [{"index": 0, "id": odd, "function": {"name": "f"}}]
    )
    assert {fragment.call_id for fragment in out} == {"call_x_0"}


def test_text_in_a_tool_call_is_made_valid_unicode() -> None:
    entry = {"index": 0, "id": "a", "function": {"name": "f\ud800", "arguments": '{"q": "\udfff"}'}}
    out = _fragments(ToolCallAssembler("call_x"), [entry])
    for fragment in out:
        (fragment.name + fragment.arguments).encode("utf-8")

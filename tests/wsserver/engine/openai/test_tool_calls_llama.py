"""A real tool call: SmolLM2 on llama.cpp, through the engine, assembled and complete."""

from __future__ import annotations

import json

from protocol.conversation import ToolCall, Turn
from protocol.generation import FinishReason, GenerationRequest
from tests.llama_server import LlamaServerProcess
from tests.wsserver.engine.openai.running import openai_engine, run

SET_LIGHT = {
    "name": "set_light",
    "description": "Switch the light of a room on or off.",
    "parameters": {
        "type": "object",
        "properties": {"room": {"type": "string"}, "on": {"type": "boolean"}},
        "required": ["room", "on"],
    },
}
# One worked example, then the question; the answer starts with the call's opening tag.
EXAMPLE = [
    Turn("user", "Turn on the light in the bedroom."),
    Turn("assistant", "", (ToolCall("call_ex1", "set_light", '{"room": "bedroom", "on": true}'),)),
    Turn("tool", '{"ok": true}', tool_call_id="call_ex1"),
    Turn("assistant", "The bedroom light is on."),
]


async def test_smollm2_calls_the_tool_and_the_call_arrives_whole(
    llama_server: LlamaServerProcess,
) -> None:
    request = GenerationRequest(
        "tools",
        [*EXAMPLE, Turn("user", "Turn on the light in the kitchen.")],
        60,
        prefix="<tool_call>\n",
        tools=(SET_LIGHT,),
    )
    async with openai_engine(llama_server.base_url) as engine:
        outcome = await run(engine, request)
    assert outcome.finish is FinishReason.TOOL_CALLS
    ((call_id, name, arguments),) = outcome.calls()
    assert call_id and name == "set_light"
    assert json.loads(arguments) == {"room": "kitchen", "on": True}
    assert outcome.text == "", "the call's text leaked as content"
    assert outcome.generation.generated_tokens > len(outcome.fragments) - 1

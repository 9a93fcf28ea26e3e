"""A voice turn through a real worker with ``--stt whisper --tts piper`` over a real LLM.

The same turn as ``test_voice_pipeline.py``, but the pipeline's LLM is the openai
engine in front of the session's real llama.cpp server (SmolLM2, temperature 0):
a spoken question (made by piper) is transcribed, the model answers the words, piper
speaks the answer, and speech while it plays barges in. The barge-in must close the
upstream stream (llama.cpp cancels the task and its slot goes idle), stop the
synthesis, and leave nothing more of the answer on the wire.
"""

from __future__ import annotations

import asyncio

from tests.llama_server import LlamaServerProcess
from tests.processes import eventually
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.session.spoken_turns import (
    ask_aloud,
    barge_in,
    check_history,
    of_response,
    second_turn_then_cancel,
)
from tests.wsserver.session.test_voice import Mic
from tests.wsserver.speech_models import piper_voice, whisper_model
from tests.wsserver.wire import RawClient, text_of
from wsserver.engine.openai.engine import OpenAICompatibleEngine
from wsserver.engine.pipeline.engine import PipelineEngine

QUESTION = "Tell me a long story about a dragon."
# SmolLM2 at temperature 0 tells this story past 400 tokens (about 6 s at its speed
# here): the answer is still being written when the barge-in comes.
ANSWER_TOKENS = 400


async def test_a_spoken_turn_answered_by_a_real_model_is_barged_in(
    start_server: StartServer, llama_server: LlamaServerProcess
) -> None:
    piper_voice(), whisper_model()  # loaded once for the test process, reused by the worker
    server = await start_server(
        engine="openai",
        upstream_url=llama_server.base_url,
        upstream_temperature=0.0,
        max_output_tokens=ANSWER_TOKENS,
        stt="whisper",
        tts="piper",
        audio_max_ahead_ms=60_000,
    )
    engine = server.engine
    assert isinstance(engine, PipelineEngine) and isinstance(engine.llm, OpenAICompatibleEngine)
    cancels = llama_server.log().count("cancel task")
    client = await RawClient.connect(url_of(server))
    ready = await client.start(audio={"sample_rate": 16000})
    mic = Mic(client)
    heard, _, _ = await ask_aloud(client, mic, QUESTION, first_audio_timeout=60)
    # The model's own words: a story, spoken as it is written.
    answer = text_of(of_response(client.seen, "response.text.delta", "resp_1"))
    assert "dragon" in answer.lower()
    # Long enough to barge into: the model is still writing it.
    assert await asyncio.to_thread(llama_server.busy) == 1, "the answer ended before the barge-in"

    # The user heard 300 ms of it, then talks over it.
    done = await barge_in(client, mic, played_ms=300)
    interrupted_at = len(client.seen)
    # The barge-in closed the upstream stream: llama.cpp cancelled the task (a finished
    # answer logs no cancel) and its slot went idle (a generous bound, polled).
    await eventually(lambda: llama_server.log().count("cancel task") > cancels, timeout=10)
    await eventually(lambda: llama_server.busy() == 0, timeout=10)
    usage = done["usage"]
    assert usage["input_tokens"] > 0
    assert ANSWER_TOKENS > usage["output_tokens_generated"] >= usage["output_tokens_delivered"] > 0
    stats = engine.stats()
    assert stats["llm_aborted"] == 1 and stats["aborted"] == 1
    assert stats["pipeline_running"] == 0 and stats["pipeline_failures"] == 0
    # The synthesis stopped with it: no clause of the first answer is given to piper now.
    syntheses = stats["syntheses"]
    await asyncio.sleep(0.5)
    assert engine.stats()["syntheses"] == syntheses

    # The barge-in's own speech is the next turn; once its answer speaks (then is
    # cancelled), nothing more of the first answer has come.
    await second_turn_then_cancel(client, mic)
    after = client.seen[interrupted_at:]
    assert of_response(after, "response.audio.delta", "resp_1") == []
    assert of_response(after, "response.text.delta", "resp_1") == []
    await eventually(lambda: llama_server.busy() == 0, timeout=10)

    # The history keeps the words heard and what the user heard of the answer: the
    # words whose audio piece was played within 300 ms.
    turns = server.sessions[ready["session_id"]].session.conversation.turns
    check_history(turns, heard, client.seen, after)
    await client.close()

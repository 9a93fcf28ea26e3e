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
from typing import Any

from tests.llama_server import LlamaServerProcess
from tests.processes import eventually
from tests.wsserver.audio_fixtures import silence
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.session.test_voice import Mic
from tests.wsserver.speech_models import piper_voice, rms, spoken, whisper_model, word_errors
from tests.wsserver.wire import RawClient, text_of
from wsserver.engine.openai.engine import OpenAICompatibleEngine
from wsserver.engine.pipeline.engine import PipelineEngine

QUESTION = "Tell me a long story about a dragon."
# SmolLM2 at temperature 0 tells this story past 400 tokens (about 6 s at its speed
# here): the answer is still being written when the barge-in comes.
ANSWER_TOKENS = 400


def _of(messages: list[dict[str, Any]], kind: str, response_id: str) -> list[dict[str, Any]]:
    return [m for m in messages if m["type"] == kind and m.get("response_id") == response_id]


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
    await mic.play(silence(300) + spoken(QUESTION) + silence(800), realtime=False)

    heard = await client.until("input_audio.transcript", 30)
    while not heard["final"]:
        heard = await client.until("input_audio.transcript", 30)
    assert heard["response_id"] == "resp_1"
    assert word_errors(QUESTION, heard["text"]) <= 2, heard["text"]

    first_audio = await client.until("response.audio.delta", 60)
    assert first_audio["response_id"] == "resp_1"
    answer_audio = first_audio["audio"]
    while len(answer_audio) < 16000:  # half a second of the answer
        message = await client.recv(30)
        if message["type"] == "response.audio.delta":
            answer_audio += message["audio"]
    assert rms(answer_audio) > 500
    # The model's own words: a story, spoken as it is written.
    assert "dragon" in text_of(_of(client.seen, "response.text.delta", "resp_1")).lower()
    # Long enough to barge into: the model is still writing it.
    assert await asyncio.to_thread(llama_server.busy) == 1, "the answer ended before the barge-in"

    # The user heard 300 ms of it, then talks over it.
    await client.send({"type": "output_audio.played", "response_id": "resp_1", "played_ms": 300})
    await mic.play(spoken("Stop, stop, that's enough."), realtime=False)
    done = await client.until("response.done", 30)
    assert (done["response_id"], done["status"]) == ("resp_1", "interrupted")
    assert done["reason"] == "speech"
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
    await mic.play(silence(800), realtime=False)
    while True:
        message = await client.recv(60)
        if message["type"] == "response.audio.delta" and message["response_id"] == "resp_2":
            break
    await client.send({"type": "response.cancel", "response_id": "resp_2"})
    while True:
        message = await client.recv(60)
        if message["type"] == "response.done" and message["response_id"] == "resp_2":
            break
    after = client.seen[interrupted_at:]
    assert _of(after, "response.audio.delta", "resp_1") == []
    assert _of(after, "response.text.delta", "resp_1") == []
    await eventually(lambda: llama_server.busy() == 0, timeout=10)

    # The history keeps the words heard and what the user heard of the answer: the
    # words whose audio piece was played within 300 ms.
    turns = server.sessions[ready["session_id"]].session.conversation.turns
    assert (turns[0].role, turns[0].text) == ("user", heard["text"])
    sent = text_of(_of(client.seen, "response.text.delta", "resp_1"))
    assert turns[1].role == "assistant"
    assert turns[1].text and sent.startswith(turns[1].text) and len(turns[1].text) < len(sent)
    second = [m for m in after if m["type"] == "input_audio.transcript" and m["final"]]
    assert second and word_errors("Stop, stop, that's enough.", second[-1]["text"]) <= 2
    assert turns[2].text == second[-1]["text"]
    await client.close()

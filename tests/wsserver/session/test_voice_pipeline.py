"""A voice turn through a real worker with ``--stt whisper --tts piper`` over the simulated LLM.

A spoken question (made by piper) goes in as binary audio frames; the worker
transcribes it (``input_audio.transcript``), the LLM answers the words, piper
speaks the answer; speech while it plays barges in, which stops the LLM and the
synthesis, and the history keeps the words heard and what the user heard.
"""

from __future__ import annotations

from typing import Any

from tests.wsserver.audio_fixtures import silence
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.session.test_voice import Mic
from tests.wsserver.speech_models import piper_voice, rms, spoken, whisper_model, word_errors
from tests.wsserver.wire import RawClient, text_of
from wsserver.engine.pipeline.engine import PipelineEngine
from wsserver.engine.simulated import SimulatedEngine

QUESTION = "Turn on the kitchen light, please."
ANSWER_TOKENS = 300


def _of(messages: list[dict[str, Any]], kind: str, response_id: str) -> list[dict[str, Any]]:
    return [m for m in messages if m["type"] == kind and m.get("response_id") == response_id]


async def test_a_spoken_turn_is_heard_answered_aloud_and_barged_in(
    start_server: StartServer,
) -> None:
    piper_voice(), whisper_model()  # loaded once for the test process, reused by the worker
    server = await start_server(
        stt="whisper",
        tts="piper",
        decode_rate=40,
        answer_tokens=ANSWER_TOKENS,
        audio_max_ahead_ms=60_000,
        replay_max_events=16,
    )
    engine = server.engine
    assert isinstance(engine, PipelineEngine) and isinstance(engine.llm, SimulatedEngine)
    client = await RawClient.connect(url_of(server))
    ready = await client.start(audio={"sample_rate": 16000})
    mic = Mic(client)
    await mic.play(silence(300) + spoken(QUESTION) + silence(800), realtime=False)

    heard = await client.until("input_audio.transcript", 30)
    while not heard["final"]:
        heard = await client.until("input_audio.transcript", 30)
    assert heard["response_id"] == "resp_1"
    assert word_errors(QUESTION, heard["text"]) <= 2, heard["text"]

    first_audio = await client.until("response.audio.delta", 30)
    assert first_audio["response_id"] == "resp_1"
    # The answer's text left with its audio: some text came by the first audio frame.
    assert text_of(client.seen)
    answer_audio = first_audio["audio"]
    while len(answer_audio) < 16000:  # half a second of the answer
        message = await client.recv(30)
        if message["type"] == "response.audio.delta":
            answer_audio += message["audio"]
    assert rms(answer_audio) > 500

    # The user heard 300 ms of it, then talks over it.
    await client.send({"type": "output_audio.played", "response_id": "resp_1", "played_ms": 300})
    await mic.play(spoken("Stop, stop, that's enough."), realtime=False)
    done = await client.until("response.done", 30)
    assert (done["response_id"], done["status"]) == ("resp_1", "interrupted")
    assert done["reason"] == "speech"
    # Usage adds up: the LLM's prompt tokens (known only once the words reached it) and
    # every token it generated, delivered or not.
    usage = done["usage"]
    assert usage["input_tokens"] > 0
    assert usage["output_tokens_generated"] >= usage["output_tokens_delivered"] > 0
    interrupted_at = len(client.seen)
    # The LLM was aborted mid-answer, by the barge-in.
    llm = engine.llm
    generated = llm.generated_by_request[f"{ready['session_id']}/resp_1"]
    assert generated < ANSWER_TOKENS
    assert engine.stats()["llm_aborted"] == 1
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
    assert llm.generated_by_request[f"{ready['session_id']}/resp_1"] == generated

    turns = server.sessions[ready["session_id"]].session.conversation.turns
    assert (turns[0].role, turns[0].text) == ("user", heard["text"])
    # What the user heard: the words whose audio piece was played within 300 ms.
    sent = text_of(_of(client.seen, "response.text.delta", "resp_1"))
    assert turns[1].role == "assistant"
    assert turns[1].text and sent.startswith(turns[1].text) and len(turns[1].text) < len(sent)
    second = [m for m in after if m["type"] == "input_audio.transcript" and m["final"]]
    assert second and word_errors("Stop, stop, that's enough.", second[-1]["text"]) <= 2
    assert turns[2].text == second[-1]["text"]

    # After a drop, a resume from the start finds the replay trimmed (16 events kept);
    # its snapshot shows the history: the words, not the placeholder.
    client.abort()
    again = await RawClient.connect(url_of(server))
    await again.resume(ready, last_seq=0)
    refused = await again.until("error", 10)
    assert refused["code"] == "replay_unavailable"
    conversation = refused["snapshot"]["conversation"]
    assert conversation[0] == {"role": "user", "text": heard["text"]}
    assert conversation[1] == {"role": "assistant", "text": turns[1].text}
    await again.close()

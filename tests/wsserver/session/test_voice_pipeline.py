"""A voice turn through a real worker with ``--stt whisper --tts piper`` over the simulated LLM.

A spoken question (made by piper) goes in as binary audio frames; the worker
transcribes it (``input_audio.transcript``), the LLM answers the words, piper
speaks the answer; speech while it plays barges in, which stops the LLM and the
synthesis, and the history keeps the words heard and what the user heard.
"""

from __future__ import annotations

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
from wsserver.engine.pipeline.engine import PipelineEngine
from wsserver.engine.simulated import SimulatedEngine

QUESTION = "Turn on the kitchen light, please."
ANSWER_TOKENS = 300


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
    heard, _, _ = await ask_aloud(client, mic, QUESTION)
    # The answer's text left with its audio: some text came by the first audio frame.
    assert text_of(client.seen)

    # The user heard 300 ms of it, then talks over it.
    done = await barge_in(client, mic, played_ms=300)
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
    await second_turn_then_cancel(client, mic)
    after = client.seen[interrupted_at:]
    assert of_response(after, "response.audio.delta", "resp_1") == []
    assert of_response(after, "response.text.delta", "resp_1") == []
    assert llm.generated_by_request[f"{ready['session_id']}/resp_1"] == generated

    turns = server.sessions[ready["session_id"]].session.conversation.turns
    check_history(turns, heard, client.seen, after)

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

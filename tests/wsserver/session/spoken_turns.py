"""The steps of a spoken voice turn that the pipeline tests share.

A question spoken by piper goes in as binary audio frames; these wait for its final
transcript and for the start of the spoken answer, and barge in over it.
"""

from __future__ import annotations

from typing import Any

from tests.wsserver.audio_fixtures import silence
from tests.wsserver.session.test_voice import Mic
from tests.wsserver.speech_models import rms, spoken, word_errors
from tests.wsserver.wire import RawClient, text_of

HALF_A_SECOND = 16000
"""Bytes of PCM16 at 16 kHz."""


def of_response(
    messages: list[dict[str, Any]], kind: str, response_id: str
) -> list[dict[str, Any]]:
    """The messages of one type for one response."""
    return [m for m in messages if m["type"] == kind and m.get("response_id") == response_id]


async def ask_aloud(
    client: RawClient, mic: Mic, question: str, first_audio_timeout: float = 30
) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    """Speak ``question``; its final transcript (checked against the words), the first
    audio event of the answer, and the first half second of the answer's audio
    (checked not silent)."""
    await mic.play(silence(300) + spoken(question) + silence(800), realtime=False)
    heard = await client.until("input_audio.transcript", 30)
    while not heard["final"]:
        heard = await client.until("input_audio.transcript", 30)
    assert heard["response_id"] == "resp_1"
    assert word_errors(question, heard["text"]) <= 2, heard["text"]

    first_audio = await client.until("response.audio.delta", first_audio_timeout)
    assert first_audio["response_id"] == "resp_1"
    answer_audio: bytes = first_audio["audio"]
    while len(answer_audio) < HALF_A_SECOND:
        message = await client.recv(30)
        if message["type"] == "response.audio.delta":
            answer_audio += message["audio"]
    assert rms(answer_audio) > 500
    return heard, first_audio, answer_audio


async def barge_in(client: RawClient, mic: Mic, played_ms: int) -> dict[str, Any]:
    """Report ``played_ms`` of resp_1 heard, then talk over it; its ``response.done``
    (checked interrupted by speech)."""
    await client.send(
        {"type": "output_audio.played", "response_id": "resp_1", "played_ms": played_ms}
    )
    await mic.play(spoken("Stop, stop, that's enough."), realtime=False)
    done = await client.until("response.done", 30)
    assert (done["response_id"], done["status"]) == ("resp_1", "interrupted")
    assert done["reason"] == "speech"
    return done


async def second_turn_then_cancel(client: RawClient, mic: Mic) -> None:
    """The barge-in's own speech is the next turn: wait until its answer speaks, then
    cancel it and wait for its ``response.done``."""
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


def check_history(
    turns: list[Any], heard: dict[str, Any], seen: list[dict[str, Any]], after: list[dict[str, Any]]
) -> None:
    """The history keeps the words heard, what the user heard of the answer (the words
    whose audio piece was played), and the barge-in's words as the next user turn."""
    assert (turns[0].role, turns[0].text) == ("user", heard["text"])
    sent = text_of(of_response(seen, "response.text.delta", "resp_1"))
    assert turns[1].role == "assistant"
    assert turns[1].text and sent.startswith(turns[1].text) and len(turns[1].text) < len(sent)
    second = [m for m in after if m["type"] == "input_audio.transcript" and m["final"]]
    assert second and word_errors("Stop, stop, that's enough.", second[-1]["text"]) <= 2
    assert turns[2].text == second[-1]["text"]

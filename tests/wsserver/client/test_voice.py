"""Barge-in end to end through the SDK: the user talks over a spoken answer."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from tests.wsserver.audio_fixtures import BYTES_PER_MS, pcm, silence
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import wait_until
from wsserver.client import SessionClient

DECODE_RATE = 20.0
TOKEN_AUDIO_MS = 1000 / DECODE_RATE
LEAD_MS = 1500
"""The answer plays this long before the user starts talking."""


async def test_speech_over_an_answer_stops_it_and_keeps_what_was_heard(
    start_server: StartServer, record_property: Any
) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=400)
    client = SessionClient(url_of(server), audio={"sample_rate": 16000}, simulate_playback=True)
    await client.open()
    received: list[tuple[float, dict[str, Any]]] = []

    async def read() -> None:
        async for event in client.events():
            received.append((time.monotonic(), event))

    reader = asyncio.create_task(read())
    await client.create_response("tell me a long story")
    await wait_until(lambda: any(e["type"] == "response.audio.delta" for _, e in received))
    mic_started = time.monotonic()
    speech_onset = mic_started + LEAD_MS / 1000
    await client.stream_audio(silence(LEAD_MS) + pcm("speech_stop") + silence(900))
    await wait_until(lambda: any(e["type"] == "input_audio.committed" for _, e in received))

    events = [e for _, e in received]
    done = next(e for e in events if e["type"] == "response.done")
    assert (done["response_id"], done["status"], done["reason"]) == (
        "resp_1",
        "interrupted",
        "speech",
    )
    # Barge-in decided on speech: speech_started comes right before the done.
    started_at = next(i for i, e in enumerate(events) if e["type"] == "input_audio.speech_started")
    assert events[started_at + 1] is done
    # Output stops: nothing of the answer after its response.done.
    done_at = events.index(done)
    assert not [e for e in events[done_at:] if e.get("response_id") == "resp_1" and e is not done]
    # The engine stopped at the decision: its count then is its count now.
    await asyncio.sleep(3 / DECODE_RATE)
    generated = server.engine.generated_by_request[f"{client.session_id}/resp_1"]  # type: ignore[attr-defined]
    assert generated == done["usage"]["output_tokens_generated"]
    assert generated < 400

    # History keeps the words whose audio the client played in full.
    assert client.player is not None
    stopped_ms = client.player.played_ms("resp_1", time.monotonic())
    runtime = server.sessions[client.session_id or ""]
    heard_words = int(stopped_ms // TOKEN_AUDIO_MS)
    await wait_until(lambda: len(runtime.session.conversation.turns[1].text.split()) == heard_words)
    answer_turn = runtime.session.conversation.turns[1]
    assert answer_turn.role == "assistant"
    delivered = "".join(e["delta"] for e in events[:done_at] if e["type"] == "response.text.delta")
    assert delivered.startswith(answer_turn.text)
    audio = b"".join(e["audio"] for e in events[:done_at] if e["type"] == "response.audio.delta")
    assert stopped_ms <= len(audio) / BYTES_PER_MS
    # The user's turn follows, and its answer starts by itself.
    assert runtime.session.conversation.turns[2].text.startswith("[audio ")

    last_output = max(
        t
        for t, e in received
        if e.get("response_id") == "resp_1"
        and e["type"] in ("response.text.delta", "response.audio.delta")
    )
    figures = {
        "speech_onset_to_last_output_frame_ms": round((last_output - speech_onset) * 1000, 1),
        "vad_speech_start_ms_into_mic_stream": events[started_at]["audio_start_ms"],
        "tokens_generated": generated,
        "played_ms_at_barge_in": stopped_ms,
        "words_kept": heard_words,
    }
    record_property("barge_in", json.dumps(figures))
    print(f"\nbarge-in: {json.dumps(figures)}")
    reader.cancel()
    await client.close()


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
async def test_spoken_turn_through_the_sdk_gets_a_spoken_answer(
    start_server: StartServer, encoding: Any
) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=8)
    async with SessionClient(
        url_of(server), encoding=encoding, audio={"sample_rate": 16000}
    ) as client:
        assert client.ready["audio"]["sample_rate"] == 16000
        # Odd lengths are fine: the SDK cuts chunks and keeps the remainder.
        speech = silence(300) + pcm("speech_weather") + silence(800)
        await client.stream_audio(speech, chunk_ms=30)
        result = await client.collect_response(timeout=20)
    assert result.status == "completed"
    assert len(result.audio) == 8 * TOKEN_AUDIO_MS * BYTES_PER_MS
    assert len(result.text.split()) == 8
    kinds = [e["type"] for e in result.events]
    assert "response.audio.delta" not in kinds
    assert kinds[-1] == "response.done"


async def test_sdk_resends_unacknowledged_audio_after_a_drop(start_server: StartServer) -> None:
    server = await start_server()
    async with SessionClient(
        url_of(server), audio={"sample_rate": 16000, "turn_detection": {"type": "manual"}}
    ) as client:
        await client.send_audio(silence(300))
        client.drop_connection()
        # Sent while disconnected: kept, and sent after the resume.
        await client.send_audio(silence(200))
        await wait_until(lambda: client.reconnects >= 1 and client._connection.connected)
        runtime = server.sessions[client.session_id or ""]
        assert runtime.voice is not None
        await wait_until(lambda: runtime.voice is not None and runtime.voice.input.last_seq == 4)
        assert runtime.voice.input.buffered_ms == 500
        await client.send_audio(b"", last=True)
        committed = None
        while committed is None:
            event = await client.next_event(10)
            if event["type"] == "input_audio.committed":
                committed = event
        assert committed["duration_ms"] == 510  # 500 ms, then a 10 ms last chunk


async def test_a_whole_resend_window_leaves_room_for_the_live_audio_after_it(
    start_server: StartServer,
) -> None:
    """The SDK's whole kept second, resent at once, then live audio at once: the default
    pacing budget takes both (a budget of exactly the resend refused the next chunk, and
    a refused chunk is never sent again: the user's words were lost)."""
    server = await start_server()
    async with SessionClient(
        url_of(server), audio={"sample_rate": 16000, "turn_detection": {"type": "manual"}}
    ) as client:
        client.drop_connection()
        await client.send_audio(silence(1000))  # kept whole, all sent on the resume
        await wait_until(lambda: client.reconnects >= 1 and client._connection.connected)
        await client.send_audio(silence(100))  # recorded meanwhile: sent right after
        await client.send_audio(b"", last=True)
        seen: list[dict[str, Any]] = []
        while not seen or seen[-1]["type"] != "input_audio.committed":
            seen.append(await client.next_event(5))
        assert not [e for e in seen if e["type"] == "error"], seen
        assert seen[-1]["duration_ms"] == 1110  # 1000 + 100 ms, then a 10 ms last chunk

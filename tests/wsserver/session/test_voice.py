"""Voice sessions over real sockets: turns, manual commits, bad audio, pacing, resume."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from protocol.audio_frame import AudioFrame, AudioKind
from protocol.encoding import JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL
from tests.wsserver.audio_fixtures import BYTES_PER_MS, chunks, pcm, silence
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, text_of

DECODE_RATE = 20.0
TOKEN_AUDIO_MS = 1000 / DECODE_RATE


def frame(
    seq: int, audio: bytes, *, last: bool = False, kind: AudioKind = AudioKind.INPUT
) -> bytes:
    return AudioFrame(kind, 0, seq, audio, last).encode()


class Mic:
    """Sends audio chunks at real-time pace with increasing seq."""

    def __init__(self, client: RawClient) -> None:
        self.client = client
        self.seq = 0

    async def play(self, audio: bytes, chunk_ms: int = 20, *, realtime: bool = True) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for index, chunk in enumerate(chunks(audio, chunk_ms)):
            if realtime:
                delay = start + index * chunk_ms / 1000 - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            await self.client.send_raw(frame(self.seq, chunk))
            self.seq += 1


def voice(**turn_detection: Any) -> dict[str, Any]:
    return {"sample_rate": 16000, "turn_detection": turn_detection}


async def until_done(client: RawClient, timeout: float = 20.0) -> dict[str, Any]:
    return await client.until("response.done", timeout)


@pytest.mark.parametrize("subprotocol", [JSON_SUBPROTOCOL, MSGPACK_SUBPROTOCOL])
async def test_silence_after_speech_commits_the_turn_and_the_answer_speaks(
    start_server: StartServer, subprotocol: str
) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=12)
    client = await RawClient.connect(url_of(server), subprotocol=subprotocol)
    ready = await client.start(audio=voice())
    assert ready["audio"]["turn_detection"]["type"] == "server_vad"
    assert ready["audio_in_seq"] == -1
    await Mic(client).play(silence(300) + pcm("speech_hello") + silence(800))
    done = await until_done(client)
    kinds = [m["type"] for m in client.seen if "seq" in m]
    assert kinds[:4] == [
        "input_audio.speech_started",
        "input_audio.speech_stopped",
        "input_audio.committed",
        "response.created",
    ]
    assert [m["seq"] for m in client.seen if "seq" in m] == list(range(1, len(kinds) + 1))
    started, stopped, committed = client.seen[1:4]
    assert 150 <= started["audio_start_ms"] <= 500
    assert committed["audio_start_ms"] <= started["audio_start_ms"]
    assert stopped["audio_end_ms"] <= committed["audio_end_ms"]
    assert done["status"] == "completed"
    audio = b"".join(m["audio"] for m in client.seen if m["type"] == "response.audio.delta")
    # Every word came with its sound: 12 tokens of 50 ms each, all of it sent.
    assert len(audio) == 12 * TOKEN_AUDIO_MS * BYTES_PER_MS
    assert done["audio_ms"] == 12 * TOKEN_AUDIO_MS
    assert len(text_of(client.seen).split()) == 12
    runtime = server.sessions[ready["session_id"]]
    turns = runtime.session.conversation.turns
    assert turns[0].role == "user" and turns[0].text == f"[audio {committed['duration_ms']} ms]"
    # The engine request carried the turn's audio itself.
    heard = server.engine.heard_by_request[f"{ready['session_id']}/resp_1"]  # type: ignore[attr-defined]
    assert heard == committed["duration_ms"] * BYTES_PER_MS
    assert turns[1].text == text_of(client.seen)


async def test_silero_detector_takes_turns_and_barges_in(start_server: StartServer) -> None:
    server = await start_server(vad="silero", decode_rate=DECODE_RATE, answer_tokens=200)
    client = await RawClient.connect(url_of(server))
    await client.start(audio=voice())
    mic = Mic(client)
    await mic.play(silence(300), realtime=False)
    await client.send({"type": "response.create", "input": "go on"})
    await client.until("response.audio.delta")
    await mic.play(silence(300) + pcm("speech_weather") + silence(800))
    first = await until_done(client)
    assert (first["status"], first["reason"]) == ("interrupted", "speech")
    committed = await client.until("input_audio.committed")
    assert committed["duration_ms"] >= len(pcm("speech_weather")) / BYTES_PER_MS
    assert (await client.until("response.created"))["response_id"] == "resp_2"


@pytest.mark.parametrize("room", ["silence", "noise", "hum"])
async def test_a_quiet_or_steady_room_makes_no_turn(start_server: StartServer, room: str) -> None:
    # Sent at once, with the pacing bound raised: the detector sees the same audio.
    server = await start_server(audio_max_ahead_ms=10_000)
    client = await RawClient.connect(url_of(server))
    await client.start(audio=voice())
    await Mic(client).play(pcm(room) * 2, realtime=False, chunk_ms=100)
    await client.send({"type": "ping", "id": "after"})
    await client.until("pong")
    assert [m["type"] for m in client.seen if "seq" in m] == []


async def test_manual_mode_commits_only_when_told(start_server: StartServer) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=3)
    client = await RawClient.connect(url_of(server))
    await client.start(audio=voice(type="manual"))
    await client.send({"type": "input_audio.commit", "id": "empty"})
    error = await client.until("error")
    assert (error["code"], error["request_id"]) == ("nothing_to_commit", "empty")
    mic = Mic(client)
    await mic.play(silence(200) + pcm("speech_stop") + silence(700))
    await client.send({"type": "ping"})
    await client.until("pong")
    # No detector in manual mode: speech makes no events by itself.
    assert not [m for m in client.seen if m["type"].startswith("input_audio.speech")]
    await client.send({"type": "input_audio.commit"})
    committed = await client.until("input_audio.committed")
    assert committed["duration_ms"] == pytest.approx(
        200 + len(pcm("speech_stop")) / BYTES_PER_MS + 700, abs=20
    )
    assert (await until_done(client))["status"] == "completed"
    # A chunk flagged last commits too.
    await client.send_raw(frame(mic.seq, silence(40), last=True))
    assert (await client.until("input_audio.committed"))["duration_ms"] == 40
    await until_done(client)


async def test_clear_drops_the_uncommitted_audio(start_server: StartServer) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    await client.start(audio=voice(type="manual"))
    await Mic(client).play(silence(300), realtime=False)
    await client.send({"type": "input_audio.clear"})
    await client.until("input_audio.cleared")
    await client.send({"type": "input_audio.commit"})
    assert (await client.until("error"))["code"] == "nothing_to_commit"


BAD_AUDIO = [
    (frame(0, silence(9)), "invalid_audio"),  # shorter than 10 ms
    (frame(0, silence(101)), "invalid_audio"),  # longer than 100 ms
    (frame(0, b""), "invalid_audio"),
    (frame(0, silence(20) + b"\x00"), "invalid_frame"),  # not whole samples
    (frame(0, silence(20), kind=AudioKind.OUTPUT), "invalid_frame"),  # the server's kind
    (b"\x01\x02", "invalid_frame"),  # shorter than the header
]


@pytest.mark.parametrize(("raw", "code"), BAD_AUDIO)
async def test_bad_audio_gets_an_error_and_the_session_goes_on(
    start_server: StartServer, raw: bytes, code: str
) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=2)
    client = await RawClient.connect(url_of(server))
    await client.start(audio=voice(type="manual"))
    await client.send_raw(raw)
    assert (await client.until("error"))["code"] == code
    # The bad chunk used no seq and left no audio behind: the next turn is whole.
    await client.send_raw(frame(0, silence(60), last=True))
    assert (await client.until("input_audio.committed"))["duration_ms"] == 60
    assert (await until_done(client))["status"] == "completed"


async def test_audio_messages_in_a_text_session_are_refused(start_server: StartServer) -> None:
    server = await start_server()
    client = await RawClient.connect(url_of(server))
    await client.start()
    await client.send_raw(frame(0, silence(20)))
    assert (await client.until("error"))["code"] == "audio_not_enabled"
    await client.send({"type": "output_audio.played", "response_id": "resp_1", "played_ms": 5})
    assert (await client.until("error"))["code"] == "audio_not_enabled"
    await client.send({"type": "response.create", "input": "still here?"})
    assert (await until_done(client))["status"] == "completed"


async def test_audio_faster_than_real_time_is_dropped_not_buffered(
    start_server: StartServer,
) -> None:
    server = await start_server(audio_max_ahead_ms=1000)
    client = await RawClient.connect(url_of(server))
    ready = await client.start(audio=voice(type="manual"))
    mic = Mic(client)
    # Ten seconds of audio at once: a second of burst is accepted, the rest dropped.
    await mic.play(silence(10_000), chunk_ms=100, realtime=False)
    await client.send({"type": "ping"})
    await client.until("pong")
    errors = [m for m in client.seen if m["type"] == "error"]
    assert [e["code"] for e in errors] == ["audio_too_fast"]  # once per run of drops
    assert errors[0]["chunk_seq"] == 10 and errors[0]["seq"] == 1
    voice_input = server.sessions[ready["session_id"]].voice
    assert voice_input is not None
    assert voice_input.input.buffered_ms <= 1000 + 100
    assert voice_input.input.dropped_chunks >= 85
    # Back at real-time pace, audio is taken again.
    await asyncio.sleep(0.5)
    await client.send_raw(frame(mic.seq, silence(100), last=True))
    committed = await client.until("input_audio.committed")
    assert committed["duration_ms"] == voice_input.input.received_ms
    assert committed["duration_ms"] <= 1000 + 100 + 100


async def test_cough_during_an_answer_resumes_it(start_server: StartServer) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=60)
    client = await RawClient.connect(url_of(server))
    ready = await client.start(audio=voice(false_interruption_ms=600, silence_duration_ms=300))
    mic = Mic(client)
    await mic.play(silence(200), realtime=False)
    await client.send({"type": "response.create", "input": "talk to me"})
    await client.until("response.created")
    await mic.play(silence(500))
    # A 200 ms burst of voice: enough to barge in, too short to be a turn.
    cough = pcm("speech_hello")[500 * BYTES_PER_MS : 700 * BYTES_PER_MS]
    await mic.play(cough + silence(600))
    first = await until_done(client)
    assert (first["status"], first["reason"]) == ("interrupted", "speech")
    discarded = await client.until("input_audio.discarded")
    assert discarded["reason"] == "too_short"
    resumed = await client.until("response.created")
    assert resumed["continues"] == first["response_id"]
    await until_done(client)
    runtime = server.sessions[ready["session_id"]]
    turns = runtime.session.conversation.turns
    # No user turn for the cough; the answer goes on from what was kept.
    assert [t.role for t in turns] == ["user", "assistant"]
    interrupted_text = text_of([m for m in client.seen if m.get("response_id") == "resp_1"])
    assert turns[1].text.startswith(interrupted_text.split()[0])
    assert not any(m["type"] == "input_audio.committed" for m in client.seen)


async def test_resume_replays_missed_audio_and_dedups_resent_chunks(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=30)
    client = await RawClient.connect(url_of(server))
    ready = await client.start(audio=voice(type="manual"))
    mic = Mic(client)
    await mic.play(silence(200), realtime=False)
    await client.send({"type": "response.create", "input": "count for me"})
    await client.until("response.audio.delta")
    seen_before = [m for m in client.seen if "seq" in m]
    client.abort()
    await asyncio.sleep(0.5)
    again = await RawClient.connect(url_of(server))
    await again.resume(ready, seen_before[-1]["seq"])
    resumed = await again.until("session.ready")
    assert resumed["audio_in_seq"] == mic.seq - 1
    # Resent chunks the server already has are ignored, not doubled.
    for seq, chunk in enumerate(chunks(silence(200))):
        await again.send_raw(frame(seq, chunk))
    done = await until_done(again)
    events = seen_before + [m for m in again.seen if "seq" in m]
    assert [m["seq"] for m in events] == list(range(1, len(events) + 1))
    audio = b"".join(m["audio"] for m in events if m["type"] == "response.audio.delta")
    assert len(audio) == done["audio_ms"] * BYTES_PER_MS == 30 * TOKEN_AUDIO_MS * BYTES_PER_MS
    voice_input = server.sessions[ready["session_id"]].voice
    assert voice_input is not None
    assert voice_input.input.duplicate_chunks == 10
    assert voice_input.input.buffered_ms == 200  # once, not twice


async def test_a_turn_spoken_during_an_answer_is_answered_after_it(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=50)
    client = await RawClient.connect(url_of(server))
    await client.start(audio=voice(interrupt_response=False))
    mic = Mic(client)
    await mic.play(silence(200), realtime=False)
    await client.send({"type": "response.create", "input": "first question"})
    await client.until("response.created")
    await mic.play(silence(200) + pcm("speech_hello") + silence(700))
    await client.until("input_audio.committed")
    # No barge-in: the first answer goes on, then the spoken turn gets its own.
    first = await until_done(client)
    assert first["status"] == "completed"
    second = await client.until("response.created")
    assert second["response_id"] == "resp_2"
    assert (await until_done(client))["status"] == "completed"
    assert not [m for m in client.seen if m["type"] == "error"]


async def test_a_monologue_cut_at_the_turn_bound_is_answered_once_it_ends(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=3, audio_max_turn_ms=1000)
    client = await RawClient.connect(url_of(server))
    ready = await client.start(audio=voice())
    await Mic(client).play(silence(300) + pcm("speech_stop") + silence(700))
    await until_done(client)
    kinds = [m["type"] for m in client.seen if "seq" in m]
    committed = [i for i, k in enumerate(kinds) if k == "input_audio.committed"]
    assert len(committed) >= 2, "the 2.2 s sentence was cut into parts"
    # One answer, after the user stopped: no answer talks over the rest of the sentence.
    assert kinds.count("response.created") == 1
    assert kinds.index("response.created") > kinds.index("input_audio.speech_stopped")
    turns = server.sessions[ready["session_id"]].session.conversation.turns
    assert [t.role for t in turns] == ["user"] * len(committed) + ["assistant"]
    # The answer's engine request got the parts' audio, at most a turn's worth (the last).
    parts = [m for m in client.seen if m["type"] == "input_audio.committed"]
    heard = server.engine.heard_by_request[f"{ready['session_id']}/resp_1"]  # type: ignore[attr-defined]
    assert heard == min(sum(p["duration_ms"] for p in parts), 1000) * BYTES_PER_MS


async def test_a_cough_after_the_conversation_moved_on_resumes_nothing(
    start_server: StartServer,
) -> None:
    server = await start_server(decode_rate=DECODE_RATE, answer_tokens=60)
    client = await RawClient.connect(url_of(server))
    await client.start(audio=voice(false_interruption_ms=600, silence_duration_ms=300))
    mic = Mic(client)
    await mic.play(silence(200), realtime=False)
    await client.send({"type": "response.create", "input": "talk to me"})
    await client.until("response.created")
    await client.send({"type": "input.text", "text": "a typed note while it talks"})
    cough = pcm("speech_hello")[500 * BYTES_PER_MS : 700 * BYTES_PER_MS]
    await mic.play(silence(300) + cough + silence(600))
    await client.until("input_audio.discarded")
    await client.send({"type": "ping"})
    await client.until("pong")
    assert not [m for m in client.seen if m["type"] in ("error", "response.created")][1:]
    assert [m["type"] for m in client.seen if m["type"] == "error"] == []

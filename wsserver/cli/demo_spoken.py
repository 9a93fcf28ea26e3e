"""The demo's spoken turn, for a worker with real speech (``--stt`` and ``--tts``).

A question spoken by the pipeline's piper voice streams in as a microphone would (real
time, 20 ms chunks), its last chunk commits the turn; the worker transcribes it, the
model answers and the answer comes back spoken.
"""

from __future__ import annotations

import asyncio

from wsserver.client import SessionClient

RATE = 16000
QUESTION = "What do bees make?"


def _spoken(text: str) -> bytes:
    """``text`` in piper's voice, PCM16 mono at :data:`RATE` (the pipeline's own voice)."""
    from wsserver.engine.pipeline.piper_voice import spoken_pcm

    return spoken_pcm(text, RATE)


async def spoken_turn_demo(url: str, max_output_tokens: int) -> None:
    """Say :data:`QUESTION`; print what the worker heard, answered and how much it spoke."""
    print(f'\nvoice: say "{QUESTION}" (spoken by piper, streamed in real time)', flush=True)
    speech = await asyncio.to_thread(_spoken, QUESTION)
    audio = {"sample_rate": RATE, "turn_detection": {"type": "manual"}}
    async with SessionClient(url, audio=audio, max_output_tokens=max_output_tokens) as client:
        await client.stream_audio(speech + bytes(RATE // 5), last=True)
        answer: list[str] = []
        while True:
            event = await asyncio.wait_for(client.next_event(), 60)
            if event["type"] == "input_audio.transcript" and event.get("final"):
                print(f"  [heard: {event['text'].strip()}]", flush=True)
            elif event["type"] == "response.text.delta":
                answer.append(event["delta"])
            elif event["type"] == "response.done":
                break
    print(f"assistant (spoken): {''.join(answer).strip()}", flush=True)
    print(
        f"  -> {event['response_id']}: {event['status']}, audio sent {event.get('audio_ms', 0)} ms",
        flush=True,
    )

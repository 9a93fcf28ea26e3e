"""The voice phase: spoken questions in, spoken answers out, through one worker.

The worker runs ``--engine local --stt whisper --tts piper``. Each voice session streams
a question spoken by piper (made here, PCM16 at 16 kHz) at real-time pace and commits
it with its last chunk; the clock runs from that chunk sent to the transcript, the first
text and the first audio of the answer. The baseline is the same LLM's time to first
token in the same worker: text sessions asking the same questions just before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

from loadtest.engines.config import EnginesConfig
from wsserver.client import SessionClient

RATE = 16000

SPOKEN_QUESTIONS = (
    "What do bees make?",
    "Why is the sky blue?",
    "What is the capital of France?",
    "How many legs does a spider have?",
)

TEXT_QUESTIONS = (
    "What do cows drink?",
    "Why is grass green?",
    "What is the capital of Spain?",
    "How many legs does an ant have?",
)
"""The text baseline's questions: as long as the spoken ones, but other words, so
neither path finds the other's prompt in llama.cpp's prompt cache."""

WARM_UP = "Hello there, how are you?"
"""The unmeasured first turn (the worker loads whisper and piper on its first)."""

VOICE_FLAGS = ("--stt=whisper", "--tts=piper")
"""What the voice phase's worker adds to the local engine."""


def spoken(text: str) -> bytes:
    """``text`` spoken by the pipeline's piper voice, as PCM16 mono at 16 kHz."""
    from wsserver.engine.pipeline.piper_voice import spoken_pcm

    return spoken_pcm(text, RATE)


def _question(number: int, turn: int, questions: tuple[str, ...] = SPOKEN_QUESTIONS) -> str:
    return questions[(number + turn) % len(questions)]


async def _voice_session(
    url: str,
    config: EnginesConfig,
    number: int,
    speech: dict[str, bytes],
    out: dict[str, list[Any]],
    go: asyncio.Barrier | None,
    questions: tuple[str, ...] = SPOKEN_QUESTIONS,
) -> None:
    audio = {"sample_rate": RATE, "turn_detection": {"type": "manual"}}
    async with SessionClient(url, audio=audio, max_output_tokens=config.max_tokens) as client:
        if go is not None:
            await go.wait()
        for turn in range(config.questions):
            # A little silence after the words, as a speaker pauses before letting go.
            words = speech[_question(number, turn, questions)]
            await client.stream_audio(words + bytes(RATE // 5), last=True)
            said = time.perf_counter()
            marks: dict[str, float] = {}
            while True:
                event = await client.next_event(120)
                kind = event["type"]
                now = time.perf_counter() - said
                if kind == "input_audio.transcript" and event.get("final"):
                    marks.setdefault("transcript_s", now)
                    out["transcripts"].append(event.get("text", ""))
                elif kind == "response.text.delta":
                    marks.setdefault("first_text_s", now)
                elif kind == "response.audio.delta":
                    marks.setdefault("first_audio_s", now)
                elif kind == "response.done":
                    out["status"].append(event["status"])
                    out["audio_ms"].append(event.get("audio_ms", 0))
                    break
            for key, value in marks.items():
                out[key].append(value)


async def _text_session(
    url: str, config: EnginesConfig, number: int, out: list[float], go: asyncio.Barrier
) -> None:
    async with SessionClient(url, max_output_tokens=config.max_tokens) as client:
        await go.wait()
        for turn in range(config.questions):
            began = time.perf_counter()
            await client.create_response(_question(number, turn, TEXT_QUESTIONS))
            first: float | None = None
            while True:
                event = await client.next_event(120)
                if event["type"] == "response.text.delta" and first is None:
                    first = time.perf_counter()
                    out.append(first - began)
                elif event["type"] == "response.done":
                    break


async def measure_voice(url: str, config: EnginesConfig) -> dict[str, Any]:
    """One warm-up turn (the worker loads whisper and piper), the text baseline, then V
    concurrent voice sessions of Q spoken questions each."""
    speech = {q: await asyncio.to_thread(spoken, q) for q in (*SPOKEN_QUESTIONS, WARM_UP)}
    sessions = config.voice_sessions
    warm: dict[str, list[Any]] = _empty()
    await _voice_session(url, _one_turn(config), 0, speech, warm, None, (WARM_UP,))
    ttft: list[float] = []
    go = asyncio.Barrier(sessions)
    await asyncio.gather(*(_text_session(url, config, n, ttft, go) for n in range(sessions)))
    out = _empty()
    go = asyncio.Barrier(sessions)
    await asyncio.gather(
        *(_voice_session(url, config, n, speech, out, go) for n in range(sessions))
    )
    spoken_ms = {q: len(speech[q]) * 500 // RATE for q in SPOKEN_QUESTIONS}
    return {**out, "ttft_s": ttft, "warmup": warm, "question_ms": spoken_ms}


def _empty() -> dict[str, list[Any]]:
    keys = ("transcript_s", "first_text_s", "first_audio_s", "transcripts", "status", "audio_ms")
    return {key: [] for key in keys}


def _one_turn(config: EnginesConfig) -> EnginesConfig:
    return dataclasses.replace(config, questions=1)

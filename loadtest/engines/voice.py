"""The voice phase: spoken questions in, spoken answers out, through one worker.

The worker runs ``--engine local --stt whisper --tts piper``. Each voice session streams
a question spoken by piper (made here, PCM16 at 16 kHz) at real-time pace and commits
it with its last chunk; the clock runs from that chunk sent to the transcript, the first
text and the first audio of the answer. The baseline is the same pipeline called
directly (:mod:`loadtest.engines.direct_voice`), with the same spoken turns; the same
LLM's time to first token in this worker (text sessions asking questions of the same
length just before) is kept beside it.
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


TRAILING_SILENCE = bytes(RATE // 5)
"""100 ms of silence (PCM16) after the words, as a speaker pauses before letting go."""

TURN_DETECTION = {"type": "manual"}
"""The voice sessions' turn detection: the last chunk commits the turn, so the worker
waits for no silence window (server VAD would add its ``silence_duration_ms``)."""


def turn_audio(words: bytes) -> bytes:
    """What one spoken turn sends (the worker) or submits (direct): the words, then a pause."""
    return words + TRAILING_SILENCE


def question(number: int, turn: int, questions: tuple[str, ...] = SPOKEN_QUESTIONS) -> str:
    """The question session ``number`` asks at ``turn`` (the same on both paths)."""
    return questions[(number + turn) % len(questions)]


def record_turn(marks: dict[str, float], out: dict[str, list[Any]]) -> None:
    """One turn's marks (seconds from the end of its input) into the samples; transcript ->
    first audio is taken per turn, so its percentiles are of the same turns."""
    for key, value in marks.items():
        out[key].append(value)
    if "transcript_s" in marks and "first_audio_s" in marks:
        out["transcript_to_audio_s"].append(marks["first_audio_s"] - marks["transcript_s"])


async def _voice_session(
    url: str,
    config: EnginesConfig,
    number: int,
    speech: dict[str, bytes],
    out: dict[str, list[Any]],
    go: asyncio.Barrier | None,
    questions: tuple[str, ...] = SPOKEN_QUESTIONS,
) -> None:
    audio = {"sample_rate": RATE, "turn_detection": TURN_DETECTION}
    async with SessionClient(url, audio=audio, max_output_tokens=config.max_tokens) as client:
        if go is not None:
            await go.wait()
        for turn in range(config.questions):
            words = speech[question(number, turn, questions)]
            await client.stream_audio(turn_audio(words), last=True)
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
            record_turn(marks, out)


async def _text_session(
    url: str, config: EnginesConfig, number: int, out: list[float], go: asyncio.Barrier
) -> None:
    async with SessionClient(url, max_output_tokens=config.max_tokens) as client:
        await go.wait()
        for turn in range(config.questions):
            began = time.perf_counter()
            await client.create_response(question(number, turn, TEXT_QUESTIONS))
            first: float | None = None
            while True:
                event = await client.next_event(120)
                if event["type"] == "response.text.delta" and first is None:
                    first = time.perf_counter()
                    out.append(first - began)
                elif event["type"] == "response.done":
                    break


async def measure_voice(
    url: str, config: EnginesConfig, speech: dict[str, bytes]
) -> dict[str, Any]:
    """One warm-up turn (the worker loads whisper and piper), the text baseline, then V
    concurrent voice sessions of Q spoken questions each (``speech``: the questions
    spoken, the same bytes as the direct path's)."""
    sessions = config.voice_sessions
    warm: dict[str, list[Any]] = empty_samples()
    await _voice_session(url, one_turn(config), 0, speech, warm, None, (WARM_UP,))
    ttft: list[float] = []
    go = asyncio.Barrier(sessions)
    await asyncio.gather(*(_text_session(url, config, n, ttft, go) for n in range(sessions)))
    out = empty_samples()
    go = asyncio.Barrier(sessions)
    await asyncio.gather(
        *(_voice_session(url, config, n, speech, out, go) for n in range(sessions))
    )
    return {**out, "ttft_s": ttft, "warmup": warm, **speech_facts(speech)}


def speak_questions() -> dict[str, bytes]:
    """Every question (and the warm-up turn) spoken by piper, made once for both paths
    (piper's synthesis varies from one call to the next)."""
    return {q: spoken(q) for q in (*SPOKEN_QUESTIONS, WARM_UP)}


def speech_facts(speech: dict[str, bytes]) -> dict[str, Any]:
    """What the report keeps about the input: the questions' lengths, the turn detection."""
    return {
        "question_ms": {q: len(speech[q]) * 500 // RATE for q in SPOKEN_QUESTIONS},
        "trailing_silence_ms": len(TRAILING_SILENCE) * 500 // RATE,
        "turn_detection": TURN_DETECTION["type"],
        "silence_window_waited_ms": 0,
    }


def empty_samples() -> dict[str, list[Any]]:
    """A voice path's samples, each a list over its turns."""
    keys = (
        "transcript_s",
        "first_text_s",
        "first_audio_s",
        "transcript_to_audio_s",
        "transcripts",
        "status",
        "audio_ms",
    )
    return {key: [] for key in keys}


def one_turn(config: EnginesConfig) -> EnginesConfig:
    """``config`` with one question per session (the warm-up)."""
    return dataclasses.replace(config, questions=1)

"""The voice baseline: the worker's own pipeline called directly, in this process.

The engine is built by :func:`wsserver.worker.components.engine_of` from the very flags
the voice phase's worker gets (``--engine local --stt whisper --tts piper``, the same
slots, threads and temperature), so it is the ``PipelineEngine`` over ``LocalEngine``
with Whisper and piper that the worker runs, with a fresh llama.cpp server of its own.
Each turn is submitted as the worker's session submits a committed spoken turn: the
``[audio N ms]`` placeholder as the user's turn, the same piper-made PCM16 (with the same
trailing pause) as ``input_audio``, the same sample rate, ``audio_output=True``, each
turn submitted as long after the session's previous answer as its audio lasts (the
worker's client streams it at real-time pace); the transcript then replaces the
placeholder and the answer's text joins the history. The clock runs from the submit
(the end of the input) to the final transcript, the first text and the first audio chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from typing import Any

from loadtest.common.processes import free_port
from loadtest.engines.config import EnginesConfig
from loadtest.engines.through_worker import LOCAL_KEY, worker_flags
from loadtest.engines.voice import (
    RATE,
    VOICE_FLAGS,
    WARM_UP,
    empty_samples,
    one_turn,
    question,
    record_turn,
    speech_facts,
    turn_audio,
)
from protocol.conversation import Turn
from protocol.generation import FinishReason, GenerationRequest, OutputChunk
from protocol.spoken_turns import audio_turn_text, with_transcript
from wsserver.cli.serve import add_serve_parser
from wsserver.engine.base import Engine
from wsserver.worker import components
from wsserver.worker.settings import Settings


class VoiceSink:
    """Takes a spoken answer and notes when its transcript, first text and first audio came."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.marks: dict[str, float] = {}
        self.transcript = ""
        self.text: list[str] = []
        self.audio_ms = 0.0
        self.reason: FinishReason | None = None
        self.finished = asyncio.Event()

    def on_output(self, chunk: OutputChunk) -> None:
        now = time.perf_counter() - self.started
        if chunk.transcript is not None and chunk.transcript.final:
            self.marks.setdefault("transcript_s", now)
            self.transcript = chunk.transcript.text
        if chunk.text:
            self.marks.setdefault("first_text_s", now)
            self.text.append(chunk.text)
        if chunk.audio:
            self.marks.setdefault("first_audio_s", now)
            self.audio_ms += chunk.audio_ms

    def on_finish(self, reason: FinishReason) -> None:
        self.reason = reason
        self.finished.set()


def pipeline_engine(config: EnginesConfig, parallel: int) -> Engine:
    """The engine ``wsserver serve`` builds from the voice worker's flags."""
    parser = argparse.ArgumentParser(prog="wsserver")
    add_serve_parser(parser.add_subparsers(dest="command"))
    flags = worker_flags(config, parallel, free_port(), *VOICE_FLAGS)
    args = parser.parse_args(["serve", *flags])
    # As the worker subprocess: its flags, no WSSERVER_* variables (the runner strips them).
    values = {name: getattr(args, name) for name in Settings.model_fields}
    os.environ["LOADTEST_LOCAL_API_KEY"] = LOCAL_KEY  # --local-api-key-env, as the worker
    settings = Settings.model_validate(
        {k: v for k, v in values.items() if v is not None}, strict=False
    )
    return components.engine_of(settings)


async def _session(
    engine: Engine,
    config: EnginesConfig,
    number: int,
    speech: dict[str, bytes],
    out: dict[str, list[Any]],
    go: asyncio.Barrier | None,
    questions: tuple[str, ...] | None = None,
) -> None:
    if go is not None:
        await go.wait()
    prompt: list[Turn] = []
    for turn in range(config.questions):
        said = question(number, turn) if questions is None else question(number, turn, questions)
        audio = turn_audio(speech[said])
        # The worker's client streams a turn at real-time pace, so its sessions' turns end
        # as long after they began as they last: so do these. Submitted at once, turns of
        # concurrent sessions would all wait for Whisper together, as no worker sees them.
        await asyncio.sleep(len(audio) / (2 * RATE))
        prompt.append(Turn("user", audio_turn_text(len(audio) * 500 // RATE)))
        request = GenerationRequest(
            f"voice-{number}-{turn}",
            tuple(prompt),
            config.max_tokens,
            input_audio=audio,
            sample_rate=RATE,
            audio_output=True,
        )
        sink = VoiceSink()
        engine.submit(request, sink)
        await asyncio.wait_for(sink.finished.wait(), 120)
        record_turn(sink.marks, out)
        out["transcripts"].append(sink.transcript)
        out["status"].append(str(sink.reason))
        out["audio_ms"].append(round(sink.audio_ms))
        # The worker's history: the transcript in place of the placeholder, then the answer.
        prompt = [*with_transcript(prompt, sink.transcript), Turn("assistant", "".join(sink.text))]


async def measure_voice_direct(config: EnginesConfig, speech: dict[str, bytes]) -> dict[str, Any]:
    """One warm-up turn (Whisper and piper load), then V concurrent sessions of Q spoken
    questions each (``speech``: the same bytes the worker gets), straight into the pipeline."""
    engine = pipeline_engine(config, config.voice_sessions)
    await engine.start()
    try:
        warm = empty_samples()
        await _session(engine, one_turn(config), 0, speech, warm, None, (WARM_UP,))
        out = empty_samples()
        go = asyncio.Barrier(config.voice_sessions)
        await asyncio.gather(
            *(_session(engine, config, n, speech, out, go) for n in range(config.voice_sessions))
        )
    finally:
        await engine.close()
    return {**out, "warmup": warm, **speech_facts(speech)}

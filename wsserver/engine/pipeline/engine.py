"""The pipeline engine: speech-to-text, then any LLM engine, then text-to-speech.

A request with ``input_audio`` is transcribed first; the transcripts are
reported (``OutputChunk.transcript``: partial ones where the STT streams, then
the final one) and the final one replaces the turn's ``[audio N ms]``
placeholder in the LLM's prompt. A request with ``audio_output`` is spoken:
the LLM's text is cut into clauses as it streams (:mod:`.clauses`), each
clause is synthesized as soon as it is complete, while the LLM goes on, and
leaves as pieces of audio each carrying the words that start in it
(:mod:`.pieces`): a clause's text is held until its audio is ready and never
leaves after it. Time to first audio is about the LLM's time to first token
plus one clause and its synthesis. Tool-call chunks pass through in order; a
request that neither listens nor speaks goes to the LLM as it is.

``abort()`` aborts the transcription, the LLM generation and the synthesis at
once and reports nothing more. A model call already running in a worker
thread cannot be killed: it is told to stop and its result is discarded
(:mod:`.threaded`). A failure of any stage ends the generation with
``FinishReason.ERROR`` (the reason is logged and counted).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from dataclasses import dataclass, field

from protocol.spoken_turns import with_transcript
from wsserver.engine.base import (
    Engine,
    EngineOverloaded,
    FinishReason,
    Generation,
    GenerationRequest,
    GenerationSink,
    OutputChunk,
)
from wsserver.engine.pipeline.clauses import ClauseLimits, ClauseSplitter
from wsserver.engine.pipeline.counters import PipelineCounters
from wsserver.engine.pipeline.errors import PipelineError
from wsserver.engine.pipeline.pieces import spoken_pieces
from wsserver.engine.pipeline.stt import SpeechToText
from wsserver.engine.pipeline.text import valid_text
from wsserver.engine.pipeline.tts import TextToSpeech

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PipelineConfig:
    """How the pipeline cuts and paces speech."""

    clauses: ClauseLimits = field(default_factory=ClauseLimits)
    piece_ms: float = 100.0
    """Length of the audio pieces a clause leaves in (the precision of "what was heard")."""
    max_running: int = 256
    """Spoken requests in the pipeline at once (the speech models serve them in turn);
    past it a submit raises ``EngineOverloaded`` like a full LLM."""


class PipelineEngine:
    """An :class:`~wsserver.engine.base.Engine` that listens and speaks around ``llm``."""

    def __init__(
        self,
        llm: Engine,
        stt: SpeechToText | None = None,
        tts: TextToSpeech | None = None,
        config: PipelineConfig | None = None,
    ) -> None:
        self.llm = llm
        self.stt = stt
        self.tts = tts
        self.config = config or PipelineConfig()
        self.counters = PipelineCounters()
        self._running: set[PipelineGeneration] = set()

    async def start(self) -> None:
        await self.llm.start()

    async def close(self) -> None:
        for generation in list(self._running):
            generation.abort()
        await self.llm.close()
        for part in (self.stt, self.tts):
            if part is not None:
                await part.close()

    def submit(self, request: GenerationRequest, sink: GenerationSink) -> Generation:
        listens = self.stt is not None and bool(request.input_audio)
        speaks = self.tts is not None and request.audio_output
        if not listens and not speaks:
            return self.llm.submit(request, sink)
        if len(self._running) >= self.config.max_running:
            raise EngineOverloaded(
                f"voice pipeline is full ({self.config.max_running} spoken requests running)"
            )
        generation = PipelineGeneration(self, request, sink, listens=listens, speaks=speaks)
        if not listens:
            # Nothing to wait for: an overloaded LLM refuses the request here and now.
            generation.submit_llm(request)
        self._running.add(generation)
        generation.run()
        return generation

    def stats(self) -> dict[str, int]:
        return {
            **self.llm.stats(),
            "pipeline_running": len(self._running),
            **self.counters.as_stats(),
        }

    def forget(self, generation: PipelineGeneration) -> None:
        """A generation ended or was aborted."""
        self._running.discard(generation)


@dataclass(frozen=True, slots=True)
class _Clause:
    text: str
    tokens: int


_Item = _Clause | OutputChunk | FinishReason


class PipelineGeneration:
    """One request through the pipeline."""

    def __init__(
        self,
        engine: PipelineEngine,
        request: GenerationRequest,
        sink: GenerationSink,
        *,
        listens: bool,
        speaks: bool,
    ) -> None:
        self._engine = engine
        self.request = request
        self._sink = sink
        self._listens = listens
        self._speaks = speaks
        self._llm: Generation | None = None
        self._finish: FinishReason | None = None
        self._task: asyncio.Task[None] | None = None
        self._stage = ""
        """What runs now: ``stt``, ``llm`` (and ``tts`` while a clause is synthesized)."""
        self._items: asyncio.Queue[_Item] = asyncio.Queue()
        self._splitter = ClauseSplitter(engine.config.clauses)
        self._tokens = 0
        """LLM tokens of text not yet in a clause."""
        self.error: str | None = None
        """Why the generation failed, when it did."""

    # -- the Generation interface ------------------------------------------------

    @property
    def input_tokens(self) -> int:
        return self._llm.input_tokens if self._llm is not None else 0

    @property
    def generated_tokens(self) -> int:
        return self._llm.generated_tokens if self._llm is not None else 0

    @property
    def finish_reason(self) -> FinishReason | None:
        return self._finish

    @property
    def stage(self) -> str:
        """What runs now: ``stt``, ``llm``, ``tts`` (a clause is synthesized while the LLM
        may still stream), or ``""`` before anything started."""
        return self._stage

    def abort(self) -> None:
        if self._finish is not None:
            return
        self._finish = FinishReason.ABORTED
        counters = self._engine.counters
        llm = self._llm
        if llm is not None and llm.finish_reason is None:
            counters.llm_aborted += 1
            llm.abort()
        if self._stage == "stt":
            counters.transcriptions_aborted += 1
        elif self._stage == "tts":
            counters.syntheses_aborted += 1
        if self._task is not None:
            # The STT or TTS iterator's cleanup tells its worker thread to stop. From
            # inside our own output (a sink that aborts) it stops at the next await.
            self._task.cancel()
        self._engine.forget(self)

    # -- running -------------------------------------------------------------------

    def submit_llm(self, request: GenerationRequest) -> None:
        """Hand the (transcribed) request to the LLM; raises ``EngineOverloaded``."""
        if self._speaks:
            request = dataclasses.replace(request, audio_output=False)
            self._llm = self._engine.llm.submit(request, _SpeakingSink(self))
        else:
            self._llm = self._engine.llm.submit(request, _PassingSink(self))
        self._stage = "llm"

    def run(self) -> None:
        """Start the task that listens, then speaks."""
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"pipeline {self.request.request_id}"
        )

    async def _run(self) -> None:
        try:
            if self._listens and not await self._listen():
                return
            if self._speaks:
                await self._speak()
        except asyncio.CancelledError:
            if self._finish is None:
                raise  # cancelled from outside without an abort: let it be
        except EngineOverloaded as exc:
            self.fail(f"llm refused the request: {exc}")
        except PipelineError as exc:
            self.fail(str(exc))
        except Exception as exc:
            log.exception("pipeline of %s failed", self.request.request_id)
            self.fail(f"internal error: {type(exc).__name__}")

    async def _listen(self) -> bool:
        """Transcribe, report, then submit to the LLM; ``False`` when there is nothing to do."""
        stt = self._engine.stt
        assert stt is not None
        self._stage = "stt"
        self._engine.counters.transcriptions += 1
        final = ""
        request = self.request
        transcripts = stt.transcribe(request.input_audio, request.sample_rate)
        async with contextlib.aclosing(transcripts):
            async for transcript in transcripts:
                self.emit(OutputChunk("", 0, transcript=transcript))
                if self._finish is not None:
                    return False
                if transcript.final:
                    final = transcript.text.strip()
        if not final:
            # Nothing was heard (silence, noise): nothing to answer.
            self.end(FinishReason.STOP)
            return False
        prompt = with_transcript(request.prompt, final)
        self.submit_llm(dataclasses.replace(request, prompt=prompt, input_audio=b""))
        return True

    async def _speak(self) -> None:
        """Synthesize clauses in order as the LLM completes them; pass the rest through."""
        tts = self._engine.tts
        assert tts is not None
        config = self._engine.config
        rate = self.request.sample_rate
        while self._finish is None:
            item = await self._items.get()
            if isinstance(item, FinishReason):
                self.end(item)
                return
            if isinstance(item, OutputChunk):
                self.emit(item)
                continue
            spoken = item.text.strip()
            audio = b""
            if spoken:
                self._stage = "tts"
                self._engine.counters.syntheses += 1
                speech = tts.synthesize(spoken, rate)
                async with contextlib.aclosing(speech):
                    audio = b"".join([chunk async for chunk in speech])
                self._stage = "llm"
            tokens = item.tokens
            for text, piece, ms in spoken_pieces(item.text, audio, rate, config.piece_ms):
                self.emit(OutputChunk(text, tokens, piece, ms))
                tokens = 0
                if self._finish is not None:
                    return

    # -- what the LLM pushes (through the sinks below) ---------------------------

    def llm_text(self, chunk: OutputChunk) -> None:
        """LLM output to speak: text into clauses, tool calls in order after them."""
        if self._finish is not None:
            return
        if chunk.tool_call is not None:
            self._flush()
            self._items.put_nowait(chunk)
            return
        self._tokens += chunk.tokens
        # The LLM's text comes from another engine (an upstream server): made valid
        # before a voice or speech server gets it, as what is heard and shown agree.
        for clause in self._splitter.feed(valid_text(chunk.text)):
            self._items.put_nowait(_Clause(clause, self._tokens))
            self._tokens = 0

    def llm_finished(self, reason: FinishReason) -> None:
        """The LLM stopped: the last clause, then the finish, in order."""
        if self._finish is not None:
            return
        self._flush()
        self._items.put_nowait(reason)

    def _flush(self) -> None:
        rest = self._splitter.flush()
        if rest or self._tokens:
            self._items.put_nowait(_Clause(rest, self._tokens))
            self._tokens = 0

    # -- what goes to the session ----------------------------------------------------

    def emit(self, chunk: OutputChunk) -> None:
        """Push a chunk unless the generation ended; a failing sink fails the generation."""
        if self._finish is not None:
            return
        try:
            self._sink.on_output(chunk)
        except Exception:
            log.exception("output of %s failed; aborting it", self.request.request_id)
            self.abort()
            with contextlib.suppress(Exception):
                self._sink.on_finish(FinishReason.ERROR)

    def end(self, reason: FinishReason) -> None:
        """The generation stopped by itself; reported once."""
        if self._finish is not None:
            return
        self._finish = reason
        self._engine.forget(self)
        self._sink.on_finish(reason)

    def fail(self, error: str) -> None:
        """A stage failed: stop the others, then finish with ``ERROR``."""
        if self._finish is not None:
            return
        log.warning("pipeline of %s failed: %s", self.request.request_id, error)
        self.error = error
        self._engine.counters.failures += 1
        llm = self._llm
        if llm is not None and llm.finish_reason is None:
            self._engine.counters.llm_aborted += 1
            llm.abort()
        self.end(FinishReason.ERROR)


class _PassingSink:
    """The LLM's output of a request that is not spoken: straight through."""

    __slots__ = ("_generation",)

    def __init__(self, generation: PipelineGeneration) -> None:
        self._generation = generation

    def on_output(self, chunk: OutputChunk) -> None:
        self._generation.emit(chunk)

    def on_finish(self, reason: FinishReason) -> None:
        self._generation.end(reason)


class _SpeakingSink:
    """The LLM's output of a spoken request: into clauses for the synthesizer."""

    __slots__ = ("_generation",)

    def __init__(self, generation: PipelineGeneration) -> None:
        self._generation = generation

    def on_output(self, chunk: OutputChunk) -> None:
        self._generation.llm_text(chunk)

    def on_finish(self, reason: FinishReason) -> None:
        self._generation.llm_finished(reason)

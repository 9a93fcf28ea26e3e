"""A simulated model server that behaves like a GPU serving many requests.

One decode loop serves every request (continuous batching): each step emits
one token to every request that finished prefill. Requests take a slot from a
fixed number; the rest wait in a bounded queue. Prefill time grows with the
prompt length. Text is deterministic for a given prompt. Every generated token
is counted per request, so the waste of a late abort is measurable.

Audio: a request that asks for audio output gets, with each token, a synthetic
syllable as long as one decode step, so audio streams at real-time pace and
stays aligned with the text. A spoken user turn needs no recognition: the
prompt's placeholder for it (which carries its length) seeds the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass

from wsserver.engine.base import (
    EngineOverloaded,
    FinishReason,
    GenerationRequest,
    GenerationSink,
    OutputChunk,
)
from wsserver.engine.scripted import count_prompt_tokens, script_for
from wsserver.engine.synthetic_voice import SyntheticVoice

log = logging.getLogger(__name__)

_VOCABULARY_TEXT = """
the a of to and in that it is was for on are as with they be at one have this from or had
by word but what some we can out other were all there when up use your how said an each
she which do their time if will way about many then them write would like so these her
long make thing see him two has look more day could go come did number sound no most
people my over know water than call first who may down side been now find any new work
part take get place made live where after back little only round man year came show every
good me give our under name very through just form sentence great think say help low line
differ turn cause much mean before move right boy old too same tell does set three want
air well also play small end put home read hand port large spell add even land here must
big high such follow act why ask men change went light kind off need house picture try us
again
"""
_VOCABULARY = tuple(_VOCABULARY_TEXT.split())
# Text-only tokens as shared chunks (frozen, so safe to share): a token costs no
# string concatenation and no dataclass construction. The first token of an
# answer has no leading space.
_FIRST_CHUNKS = tuple(OutputChunk(word, 1) for word in _VOCABULARY)
_NEXT_CHUNKS = tuple(OutputChunk(" " + word, 1) for word in _VOCABULARY)

_HISTORY_SIZE = 10_000
_YIELD_EVERY = 32


@dataclass(frozen=True, slots=True)
class SimulatedEngineConfig:
    """Speed and capacity of the simulated engine."""

    decode_rate: float = 50.0
    """Tokens per second per request (one decode step every 1/rate seconds)."""
    slots: int = 256
    """Requests decoded together; the rest queue."""
    max_queue: int = 10_000
    prefill_base_s: float = 0.02
    prefill_per_token_s: float = 0.0001
    answer_tokens: int = 0
    """Natural answer length; 0 derives 40-120 tokens from the prompt."""


class SimulatedGeneration:
    """One request inside the simulated engine."""

    def __init__(
        self, engine: SimulatedEngine, request: GenerationRequest, sink: GenerationSink
    ) -> None:
        self._engine = engine
        self.request = request
        self.request_id = request.request_id
        self._sink = sink
        self._input_tokens = count_prompt_tokens(request.prompt)
        seed_text = request.prompt[-1].text if request.prompt else ""
        digest = hashlib.sha256(seed_text.encode()).digest()
        self._seed = int.from_bytes(digest[:8], "little")
        natural = engine.config.answer_tokens or 40 + self._seed % 81
        # Tool calls, answers quoting tool results and JSON follow a script.
        self._script = script_for(request, self._seed)
        self._finish_with = FinishReason.STOP
        if self._script is not None:
            natural = len(self._script)
            if any(chunk.tool_call is not None for chunk in self._script):
                self._finish_with = FinishReason.TOOL_CALLS
        # A continuation picks up the same deterministic text where the prefix ends.
        self._offset = min(len(request.prefix.split()), natural) if self._script is None else 0
        remaining = natural - self._offset
        self._target = min(remaining, request.max_output_tokens)
        self._length_limited = remaining > request.max_output_tokens
        self._generated = 0
        """Steps taken (an end-of-arguments marker is a step but no token)."""
        self._tokens = 0
        self._finish: FinishReason | None = None
        self.ready_at = 0.0
        self._voice = (
            SyntheticVoice(request.sample_rate, 1000.0 / engine.config.decode_rate)
            if request.audio_output
            else None
        )

    @property
    def input_tokens(self) -> int:
        return self._input_tokens

    @property
    def generated_tokens(self) -> int:
        return self._tokens

    @property
    def finish_reason(self) -> FinishReason | None:
        return self._finish

    def _token_hash(self, index: int) -> int:
        mixed = ((self._seed + index) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        return mixed ^ (mixed >> 29)

    def token_text(self, index: int) -> str:
        """The deterministic text of token ``index``."""
        word = _VOCABULARY[self._token_hash(index) % len(_VOCABULARY)]
        return word if index == 0 else " " + word

    def _chunk(self, index: int) -> OutputChunk:
        if self._script is not None:
            return self._script[index]
        voice = self._voice
        if voice is None:
            # _token_hash, inline: once per token.
            mixed = ((self._seed + index) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
            word = (mixed ^ (mixed >> 29)) % len(_VOCABULARY)
            return _FIRST_CHUNKS[word] if index == 0 else _NEXT_CHUNKS[word]
        text = self.token_text(index)
        return OutputChunk(text, 1, voice.speak(self._token_hash(index) >> 7), voice.chunk_ms)

    def step(self) -> bool:
        """Produce one token into the sink; ``False`` when the generation is finished."""
        if self._target > 0:
            chunk = self._chunk(self._offset + self._generated)
            self._generated += 1
            tokens = chunk.tokens
            if tokens:
                self._tokens += tokens
                # The engine's counts (total, and per request while it is remembered).
                engine = self._engine
                engine.tokens_generated += 1
                counts = engine.generated_by_request
                rid = self.request_id
                if rid in counts:
                    counts[rid] += 1
            self._sink.on_output(chunk)
        if self._finish is None and self._generated >= self._target:
            self._finish = FinishReason.LENGTH if self._length_limited else self._finish_with
            self._sink.on_finish(self._finish)
        return self._finish is None

    def abort(self) -> None:
        if self._finish is not None:
            return
        self._finish = FinishReason.ABORTED
        self._engine.release(self)

    def fail(self) -> None:
        """Tell the sink the request ended in error (after its output failed)."""
        self._sink.on_finish(FinishReason.ERROR)


class SimulatedEngine:
    """The shared decode loop, slots and queue."""

    def __init__(self, config: SimulatedEngineConfig | None = None) -> None:
        self.config = config or SimulatedEngineConfig()
        self._running: list[SimulatedGeneration] = []
        self._queue: deque[SimulatedGeneration] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.tokens_generated = 0
        self.steps = 0
        self.generated_by_request: OrderedDict[str, int] = OrderedDict()
        """Tokens generated per request id (the most recent 10,000 requests)."""
        self.heard_by_request: OrderedDict[str, int] = OrderedDict()
        """Bytes of input audio per request id that had any (the most recent 10,000)."""

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._decode_loop(), name="simulated-decode-loop")

    async def close(self) -> None:
        for generation in [*self._running, *self._queue]:
            generation.abort()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def submit(self, request: GenerationRequest, sink: GenerationSink) -> SimulatedGeneration:
        if len(self._queue) >= self.config.max_queue:
            raise EngineOverloaded(f"engine queue is full ({self.config.max_queue} waiting)")
        generation = SimulatedGeneration(self, request, sink)
        self.generated_by_request[request.request_id] = 0
        while len(self.generated_by_request) > _HISTORY_SIZE:
            self.generated_by_request.popitem(last=False)
        if request.input_audio:
            self.heard_by_request[request.request_id] = len(request.input_audio)
            while len(self.heard_by_request) > _HISTORY_SIZE:
                self.heard_by_request.popitem(last=False)
        self._queue.append(generation)
        self._admit(asyncio.get_running_loop().time())
        self._wakeup.set()
        return generation

    def release(self, generation: SimulatedGeneration) -> None:
        """Free a slot (or a queue place) at once."""
        if generation in self._running:
            self._running.remove(generation)
        else:
            with contextlib.suppress(ValueError):
                self._queue.remove(generation)
        self._admit(asyncio.get_running_loop().time())

    def stats(self) -> dict[str, int]:
        return {
            "running": len(self._running),
            "queued": len(self._queue),
            "slots": self.config.slots,
            "tokens_generated": self.tokens_generated,
            "steps": self.steps,
        }

    def _failed(self, generation: SimulatedGeneration) -> None:
        # A failing sink must not stop the loop that serves every other request.
        log.exception("output of %s failed; aborting it", generation.request.request_id)
        generation.abort()
        # And the request still ends for its owner (a response must get its done).
        with contextlib.suppress(Exception):
            generation.fail()

    def _step_batch(self, batch: list[SimulatedGeneration], now: float) -> bool:
        """One decode step for each ready generation of ``batch``; whether any finished."""
        finished = False
        for generation in batch:  # once per token: no call but the step itself
            if generation.ready_at > now or generation.finish_reason is not None:
                continue
            try:
                alive = generation.step()
            except Exception:
                self._failed(generation)
                alive = False
            if not alive:
                finished = True
        return finished

    def _admit(self, now: float) -> None:
        config = self.config
        while self._queue and len(self._running) < config.slots:
            generation = self._queue.popleft()
            prefill = config.prefill_base_s + config.prefill_per_token_s * generation.input_tokens
            generation.ready_at = now + prefill
            self._running.append(generation)

    async def _decode_loop(self) -> None:
        loop = asyncio.get_running_loop()
        interval = 1.0 / self.config.decode_rate
        next_step = loop.time()
        while True:
            if not self._running:
                self._wakeup.clear()
                await self._wakeup.wait()
                next_step = loop.time()
            now = loop.time()
            if next_step > now:
                await asyncio.sleep(next_step - now)
                now = loop.time()
            # A late loop drops the missed steps instead of bursting to catch up.
            next_step += interval
            if next_step < now:
                next_step = now + interval
            self.steps += 1
            finished = False
            running = list(self._running)
            for start in range(0, len(running), _YIELD_EVERY):
                if start:
                    # The batch's output wakes a writer per session; letting them (and
                    # any interrupt that arrived) run now keeps control from queueing
                    # behind the output of a thousand sessions.
                    await asyncio.sleep(0)
                if self._step_batch(running[start : start + _YIELD_EVERY], now):
                    finished = True
            if finished:
                self._running = [g for g in self._running if g.finish_reason is None]
                self._admit(now)

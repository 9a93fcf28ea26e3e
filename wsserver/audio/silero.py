"""Silero VAD: a small neural voice-activity detector, run with onnxruntime.

An optional alternative to the energy detector in :mod:`wsserver.audio.vad`: it
tells speech from loud non-speech (music, typing, a door) where energy cannot.
The model is the ONNX file inside the ``silero-vad`` wheel; nothing is
downloaded at run time and torch is never imported. Install with::

    pip install onnxruntime && pip install --no-deps silero-vad

(``--no-deps`` because the wheel declares torch, which this module does not use.)

The model judges 512-sample (32 ms) windows at 16 kHz and carries a recurrent
state from one window to the next, so each detector keeps its own state while
all detectors in the process share one inference session.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Protocol

import numpy as np

from wsserver.audio.vad import SpeechSegmenter, VadEvent, VadSettings

MODEL_RATE = 16000
WINDOW_SAMPLES = 512
WINDOW_MS = WINDOW_SAMPLES * 1000 // MODEL_RATE  # 32
CONTEXT_SAMPLES = 64
"""Tail of the previous window prepended to each input, as silero's own wrapper does."""
HYSTERESIS = 0.15
"""Speech keeps going down to ``threshold - HYSTERESIS`` (silero's ``neg_threshold``)."""
SUPPORTED_RATES = (16000, 24000)

_INSTALL_HINT = "pip install onnxruntime && pip install --no-deps silero-vad"
_MODEL_FILE = "silero_vad.onnx"


class VadUnavailable(Exception):
    """The Silero detector cannot run here: onnxruntime or the model is missing."""


class _Session(Protocol):
    """The part of ``onnxruntime.InferenceSession`` this module uses."""

    def run(self, output_names: None, input_feed: dict[str, np.ndarray]) -> list[np.ndarray]: ...


def model_path() -> Path:
    """Where the installed ``silero-vad`` wheel keeps its ONNX model."""
    # find_spec locates the package without running its __init__, which imports
    # torch; importlib.resources.files("silero_vad") would import it and fail.
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise VadUnavailable(f"silero vad needs the silero-vad package: {_INSTALL_HINT}")
    for location in spec.submodule_search_locations:
        path = Path(location) / "data" / _MODEL_FILE
        if path.is_file():
            return path
    raise VadUnavailable(
        f"silero-vad is installed but has no data/{_MODEL_FILE}; reinstall: {_INSTALL_HINT}"
    )


def load_model() -> None:
    """Load the shared model now (a server checks at startup); raises :class:`VadUnavailable`."""
    _shared_session()


@functools.cache
def _shared_session() -> _Session:
    # One session per process: the weights (2 MB) and the runtime's buffers are
    # shared, and a 32 ms window is far too small to gain from several threads,
    # so sessions do not compete for cores with each other or the event loop.
    try:
        import onnxruntime  # type: ignore[import-untyped]
    except ImportError as exc:
        raise VadUnavailable(f"silero vad needs onnxruntime: {_INSTALL_HINT}") from exc
    path = model_path()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    try:
        session: _Session = onnxruntime.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime's pybind errors share no public base class
        raise VadUnavailable(f"cannot load the silero vad model {path}: {exc}") from exc
    return session


class SileroVad:
    """Silero's speech probability per 32 ms window, turned into speech boundaries.

    Accepts PCM16 at 16 kHz or 24 kHz (downsampled to the model's 16 kHz here);
    event offsets are milliseconds of the input stream. A window is voiced when
    its probability reaches ``settings.threshold``, or ``threshold - 0.15`` while
    speech is already under way, so a soft syllable does not end the turn.
    """

    __slots__ = (
        "_context",
        "_pending",
        "_resample_history",
        "_segmenter",
        "_session",
        "_state",
        "block",
        "sample_rate",
        "settings",
    )

    def __init__(self, sample_rate: int, settings: VadSettings | None = None) -> None:
        if sample_rate not in SUPPORTED_RATES:
            raise ValueError(
                f"silero vad supports sample rates {SUPPORTED_RATES}, not {sample_rate}"
            )
        self.sample_rate = sample_rate
        self.settings = settings or VadSettings()
        self.block = WINDOW_SAMPLES * sample_rate // MODEL_RATE
        """Input samples per model window (512 at 16 kHz, 768 at 24 kHz)."""
        self._session = _shared_session()
        self._state = np.zeros((2, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT_SAMPLES, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.int16)
        self._resample_history = np.zeros(2, dtype=np.float32)
        self._segmenter = SpeechSegmenter(self.settings, WINDOW_MS)

    @property
    def speaking(self) -> bool:
        """Whether the user is speaking now."""
        return self._segmenter.speaking

    def feed(self, samples: np.ndarray) -> list[VadEvent]:
        """Process int16 samples; return the boundaries they contain."""
        data = np.concatenate((self._pending, samples)) if self._pending.size else samples
        usable = data.size - data.size % self.block
        self._pending = data[usable:].copy()
        events: list[VadEvent] = []
        # Whole windows only, so any chunking of the stream gives the same events.
        for start in range(0, usable, self.block):
            window = self._to_model_rate(data[start : start + self.block])
            event = self._segmenter.window(self._voiced(self._probability(window)))
            if event is not None:
                events.append(event)
        return events

    def _voiced(self, probability: float) -> bool:
        threshold = self.settings.threshold
        if self._segmenter.speaking:
            threshold = max(threshold - HYSTERESIS, 0.01)
        return probability >= threshold

    def _probability(self, window: np.ndarray) -> float:
        model_input = np.concatenate((self._context, window))[np.newaxis, :]
        probability, self._state = self._session.run(
            None,
            {
                "input": model_input,
                "state": self._state,
                "sr": np.array(MODEL_RATE, dtype=np.int64),
            },
        )
        self._context = window[-CONTEXT_SAMPLES:]
        return float(probability[0, 0])

    def _to_model_rate(self, block: np.ndarray) -> np.ndarray:
        """One block of int16 input as 512 float32 samples in [-1, 1] at 16 kHz."""
        audio = block.astype(np.float32) / 32768.0
        if self.sample_rate == MODEL_RATE:
            return audio
        # 24 kHz -> 16 kHz. A [1, 2, 1] / 4 low-pass (-12 dB at the new 8 kHz Nyquist,
        # nothing at 12 kHz) is plenty for a detector and costs three vector ops; the
        # two samples carried over make block edges filter like the middle.
        padded = np.concatenate((self._resample_history, audio))
        self._resample_history = padded[-2:]
        smooth = 0.25 * padded[:-2] + 0.5 * padded[1:-1] + 0.25 * padded[2:]
        # Output k sits at input 1.5 k: every other one falls on an input sample, the
        # rest halfway between two (linear interpolation).
        triples = smooth.reshape(-1, 3)
        out = np.empty((triples.shape[0], 2), dtype=np.float32)
        out[:, 0] = triples[:, 0]
        out[:, 1] = 0.5 * (triples[:, 1] + triples[:, 2])
        return out.reshape(-1)

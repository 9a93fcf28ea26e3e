"""The voice pipeline's exceptions (library errors are translated at each boundary)."""

from __future__ import annotations

from wsserver.engine.base import EngineError


class PipelineError(EngineError):
    """Base class of the voice pipeline's failures."""


class SpeechModelUnavailable(PipelineError):
    """A local speech model cannot be loaded (package missing, wrong version, bad hash)."""


class SpeechToTextError(PipelineError):
    """Transcribing failed (the model raised, the server answered badly)."""


class TextToSpeechError(PipelineError):
    """Synthesizing failed (the model raised, the server answered badly)."""

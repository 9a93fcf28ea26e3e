"""The voice-activity detector a session's settings and the worker's ``--vad`` name."""

from __future__ import annotations

from protocol.messages import AudioSettings
from wsserver.audio.input import vad_settings
from wsserver.audio.vad import EnergyVad, VoiceDetector

DETECTORS = ("energy", "silero")
"""The names ``--vad`` accepts."""


def open_detector(kind: str, settings: AudioSettings) -> VoiceDetector | None:
    """The session's detector: ``None`` in manual mode, else energy or Silero."""
    if settings.turn_detection.type == "manual":
        return None
    if kind == "silero":
        # Imported only when chosen: it loads the ONNX runtime.
        from wsserver.audio.silero import SileroVad

        return SileroVad(settings.sample_rate, vad_settings(settings))
    return EnergyVad(settings.sample_rate, vad_settings(settings))

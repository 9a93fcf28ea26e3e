"""The detector selector: the name ``--vad`` gives and the session's turn detection."""

from __future__ import annotations

from typing import get_args

from protocol.messages import AudioSettings
from wsserver.audio.selector import DETECTORS, open_detector
from wsserver.audio.silero import SileroVad
from wsserver.audio.vad import EnergyVad
from wsserver.worker.settings import Settings


def _audio(turn_detection: str) -> AudioSettings:
    return AudioSettings.model_validate({"turn_detection": {"type": turn_detection}})


def test_each_name_opens_its_detector() -> None:
    assert isinstance(open_detector("energy", _audio("server_vad")), EnergyVad)
    assert isinstance(open_detector("silero", _audio("server_vad")), SileroVad)


def test_manual_turn_detection_has_no_detector() -> None:
    assert open_detector("energy", _audio("manual")) is None
    assert open_detector("silero", _audio("manual")) is None


def test_the_vad_setting_offers_exactly_the_selectors_names() -> None:
    assert get_args(Settings.model_fields["vad"].annotation) == DETECTORS

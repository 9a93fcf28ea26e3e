"""The local piper voice: real speech, of the right length, at the session's rate."""

from __future__ import annotations

import pytest

from tests.wsserver.speech_models import piper_voice, rms
from wsserver.engine.pipeline.errors import SpeechModelUnavailable
from wsserver.engine.pipeline.model_files import PinnedPackage
from wsserver.engine.pipeline.piper_voice import PIPER_PACKAGE, PiperTextToSpeech

SENTENCE = "The kitchen light is on now, and the door is locked."


async def _speak(text: str, rate: int, *, steady: bool = True) -> list[bytes]:
    tts = PiperTextToSpeech(piper_voice(), steady=steady)
    try:
        return [chunk async for chunk in tts.synthesize(text, rate)]
    finally:
        await tts.close()


@pytest.mark.parametrize("rate", [16000, 24000, 48000])
async def test_speech_is_loud_enough_and_as_long_as_the_text_at_the_asked_rate(rate: int) -> None:
    audio = b"".join(await _speak(SENTENCE, rate))
    seconds = len(audio) / 2 / rate
    # 52 characters, 11 words: between 2 and 6 seconds at any sane speaking rate.
    assert 2.0 <= seconds <= 6.0
    assert rms(audio) > 500
    # The same speech at every rate: the resampler changed the rate, not the duration
    # (steady: without sampling noise piper's timing is the same every time).
    reference = b"".join(await _speak(SENTENCE, 22050))
    assert seconds == pytest.approx(len(reference) / 2 / 22050, abs=0.005)


async def test_by_default_the_voice_varies_a_little_as_trained() -> None:
    lengths = {len(b"".join(await _speak(SENTENCE, 16000, steady=False))) for _ in range(3)}
    steady = {len(b"".join(await _speak(SENTENCE, 16000))) for _ in range(2)}
    assert len(steady) == 1
    assert len(lengths) > 1


async def test_one_chunk_per_sentence_as_it_is_made() -> None:
    chunks = await _speak("First sentence here. And a second one.", 16000)
    assert len(chunks) >= 2


async def test_nothing_to_say_is_no_audio() -> None:
    assert await _speak(" ... ", 16000) == []


def test_a_wrong_package_version_is_refused() -> None:
    wrong = PinnedPackage(PIPER_PACKAGE.distribution, PIPER_PACKAGE.module, "0.0.1")
    with pytest.raises(SpeechModelUnavailable, match=r"the pinned version is 0\.0\.1"):
        wrong.data_dir()
    with pytest.raises(SpeechModelUnavailable, match="not installed"):
        PinnedPackage("no-such-voice-package", "no_such_voice_package", "1.0").data_dir()

"""The local Whisper model on speech made by piper at test time."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocol.generation import Transcript
from tests.wsserver.speech_models import spoken, whisper_model, word_errors
from wsserver.engine.pipeline.errors import SpeechModelUnavailable
from wsserver.engine.pipeline.model_files import join_parts, sha256_of
from wsserver.engine.pipeline.whisper import MODEL_SHA256, WhisperSpeechToText, prepare_model_dir

SENTENCES = [
    "Turn on the kitchen light, please.",
    "What time does the train to the airport leave tomorrow morning?",
]


async def _heard(audio: bytes, rate: int = 16000) -> list[Transcript]:
    stt = WhisperSpeechToText(whisper_model())
    try:
        return [t async for t in stt.transcribe(audio, rate)]
    finally:
        await stt.close()


@pytest.mark.parametrize("sentence", SENTENCES)
async def test_known_sentences_are_heard(sentence: str) -> None:
    transcripts = await _heard(spoken(sentence))
    final = transcripts[-1]
    assert final.final and all(not t.final for t in transcripts[:-1])
    # Small errors allowed (a homophone); a wrong or empty transcript is not.
    assert word_errors(sentence, final.text) <= 2, final.text


async def test_partial_transcripts_come_before_the_final_one() -> None:
    transcripts = await _heard(spoken(SENTENCES[0]) + spoken(SENTENCES[1]))
    assert len(transcripts) >= 2
    assert transcripts[-1].text.startswith(transcripts[0].text)


async def test_any_input_rate_is_resampled_for_the_model() -> None:
    final = (await _heard(spoken(SENTENCES[0], 24000), 24000))[-1]
    assert word_errors(SENTENCES[0], final.text) <= 2, final.text


async def test_too_little_audio_is_heard_as_nothing() -> None:
    assert await _heard(b"\x00\x00" * 800) == [Transcript("", final=True)]


def test_the_model_folder_is_joined_once_and_checked(tmp_path: Path) -> None:
    folder = prepare_model_dir(tmp_path / "whisper")
    assert sha256_of([folder / "model.bin"]) == MODEL_SHA256
    assert {p.name for p in folder.iterdir()} == {
        "model.bin",
        "config.json",
        "tokenizer.json",
        "vocabulary.json",
    }
    # A corrupted copy is rewritten from the packages.
    with (folder / "model.bin").open("r+b") as file:
        file.write(b"garbage")
    prepare_model_dir(tmp_path / "whisper")
    assert sha256_of([folder / "model.bin"]) == MODEL_SHA256


def test_parts_that_do_not_join_to_the_pinned_hash_are_refused(tmp_path: Path) -> None:
    part = tmp_path / "part"
    part.write_bytes(b"not a model")
    with pytest.raises(SpeechModelUnavailable, match="expected"):
        join_parts([part, part], tmp_path / "model.bin", MODEL_SHA256)
    assert not (tmp_path / "model.bin").exists()

"""The demo page in a real Chromium against the real engines: SmolLM2 in the worker's
embedded llama.cpp (``--engine local``), Whisper hearing the fake microphone and piper
speaking the answers (``--stt whisper --tts piper``).

Piper speaks faster than real time, so the page holds seconds of an answer's audio
queued: talking over it must drop that queue at once (the playback worklet reports what
it dropped, and that it played nothing after).

The fake microphone asks for a story and then stays quiet for 20 s, so that the answer's
audio has started when it speaks again, however busy the machine: on a loaded 2-core
machine the transcript (Whisper: ~1.2x the sentence's length), the first clause from
SmolLM2 and its speech take up to ~10 s, and speech that comes back before the audio
interrupts the turn with nothing queued to drop. The story (up to 120 tokens, ~30 s
spoken) is still playing then."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.processes import WorkerProcess
from tests.wsserver.demo_page.browser import chromium, poll, spoken_turn_wav
from tests.wsserver.speech_models import piper_voice, spoken, whisper_model


@pytest.fixture(scope="module")
def worker() -> Iterator[WorkerProcess]:
    piper_voice(), whisper_model()  # fetched and checked once, before the worker needs them
    worker = WorkerProcess(
        "--auth", "none", "--engine", "local", "--local-parallel=1",
        "--stt", "whisper", "--tts", "piper", "--max-output-tokens", "120",
        name="demo-real-engines",
    ).start(timeout=120)  # fmt: skip
    yield worker
    worker.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    request = spoken("Please tell me a long story about a dragon.")
    driver = chromium(spoken_turn_wav(tmp_path_factory.mktemp("microphone"), request, quiet=20.0))
    yield driver
    driver.quit()


def view(browser: WebDriver) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = browser.execute_script("return window.demo?.view ?? []")
    return turns


def answers(browser: WebDriver) -> list[dict[str, Any]]:
    return [turn for turn in view(browser) if turn["role"] == "assistant"]


def open_page(browser: WebDriver, worker: WorkerProcess) -> None:
    browser.get(f"{worker.http}/demo/")
    state = "return document.getElementById('connection')?.dataset.state"
    poll("a session", lambda: browser.execute_script(state) in ("connected", "resumed"), 60)
    browser.find_element(By.ID, "new-session").click()
    poll(
        "a new session", lambda: browser.execute_script(state) == "connected" and not view(browser)
    )


def test_a_text_answer_from_the_model_streams(browser: WebDriver, worker: WorkerProcess) -> None:
    open_page(browser, worker)
    browser.find_element(By.ID, "input").send_keys("Tell me a story about a dragon.\n")
    turn = poll(
        "the answer", lambda: next((t for t in answers(browser) if t.get("status")), None), 60
    )
    assert turn["status"] in ("completed", "incomplete"), turn
    assert "dragon" in turn["text"].lower(), turn
    seqs = browser.execute_script("return window.demo.probe.deltaSeqs")
    # With speech on, text leaves clause by clause with its audio: a story is several.
    assert len(seqs) > 1 and seqs == sorted(set(seqs)), ("streamed, each delta once", turn)
    assert "generated" in turn["usage"]


def test_a_spoken_turn_is_heard_answered_aloud_and_talking_over_it_drops_the_audio(
    browser: WebDriver, worker: WorkerProcess
) -> None:
    open_page(browser, worker)
    browser.find_element(By.ID, "voice-toggle").click()
    # Whisper heard the fake microphone's sentence.
    heard = poll(
        "the transcript",
        lambda: next((t["text"] for t in view(browser) if t["text"].startswith("🎤")), None),
        60,
    )
    assert "dragon" in heard.lower(), heard
    poll("a spoken answer", lambda: any(len(t["text"]) > 10 for t in answers(browser)), 60)
    # The microphone speaks again while the answer plays: the page drops what it had
    # queued at once, and its worklet plays nothing after the flush.
    flushes = poll(
        "playback cut by speech",
        lambda: [
            f
            for f in browser.execute_script("return window.demo.probe.flushes")
            if f["dropped"] > 0 and f["nextPlayed"] is not None
        ],
        60,
    )
    assert all(f["nextPlayed"] == 0 for f in flushes), flushes
    assert browser.execute_script("return window.demo.probe.errors") == []

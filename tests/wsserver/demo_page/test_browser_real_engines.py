"""The demo page in a real Chromium against the real engines: SmolLM2 in the worker's
embedded llama.cpp (``--engine local``), Whisper hearing the fake microphone and piper
speaking the answers (``--stt whisper --tts piper``).

Piper speaks faster than real time, so the page holds seconds of an answer's audio
queued: talking over it must drop that queue at once (the playback worklet reports what
it dropped, and that it played nothing after).

The microphone is the scripted one: it asks for a story, and speaks again only once the
page reports the answer's audio playing, so the test holds however long a loaded machine
takes to hear, answer and speak (speech that came before the audio would interrupt a
turn with nothing queued to drop)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.processes import WorkerProcess
from tests.wsserver.demo_page.browser import chromium, poll, say
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
def browser() -> Iterator[WebDriver]:
    driver = chromium()
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


def flushes_reported(browser: WebDriver, after: int) -> list[dict[str, Any]]:
    """The page's flushes since its ``after``-th, each with what played after it."""
    flushes = browser.execute_script("return window.demo.probe.flushes")[after:]
    return [f for f in flushes if f["nextPlayed"] is not None]


def audio_playing(browser: WebDriver) -> bool:
    played = browser.execute_script("return window.demo.probe.played")
    return bool(played["samples"] > 0 and not played["idle"])


def audio_ahead(browser: WebDriver, ms: float, timeout: float) -> bool:
    """Whether, within ``timeout``, the page played audio with ``ms`` more of it queued
    (barge-in comes a few hundred ms after the words begin: a clause caught near its end
    may be over by then, with nothing left to drop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queued = browser.execute_script("return window.demo.probe.queuedMs()")
        if queued >= ms and audio_playing(browser):
            return True
        time.sleep(0.02)
    return False


# Hearing, answering and speaking on this machine's CPUs, a few turns over: on a loaded
# machine that is minutes, past the suite's per-test bound (a liveness bound, not speed).
@pytest.mark.timeout(480)
def test_a_spoken_turn_is_heard_answered_aloud_and_talking_over_it_drops_the_audio(
    browser: WebDriver, worker: WorkerProcess
) -> None:
    open_page(browser, worker)
    browser.find_element(By.ID, "voice-toggle").click()
    poll("the microphone", lambda: "listening" in browser.find_element(By.ID, "voice-state").text)
    say(browser, spoken("Please tell me a long story about a dragon."))
    # Whisper heard the scripted microphone's sentence.
    heard = poll(
        "the transcript",
        lambda: next((t["text"] for t in view(browser) if t["text"].startswith("🎤")), None),
        60,
    )
    assert "dragon" in heard.lower(), heard
    poll("a spoken answer", lambda: any(len(t["text"]) > 10 for t in answers(browser)), 60)
    # The user speaks again while the answer plays: the page drops what it had queued at
    # once, and its worklet plays nothing after the flush. Should a clause's audio run
    # out just as the words come (a gap between clauses on a slow machine), those words
    # are a new turn, with an answer that may be too short to talk over: then the user
    # asks for another story, and tries again while that one plays.
    cut: list[dict[str, Any]] = []
    tried: list[list[dict[str, Any]]] = []  # each try's flushes, for the failure message
    for _ in range(5):
        if not audio_ahead(browser, 500, 45):
            say(browser, spoken("Please tell me a long story about a dragon."))
            continue
        before = len(browser.execute_script("return window.demo.probe.flushes"))
        say(browser, spoken("Wait, stop there."))
        flushes = poll(
            "a flush that reports what played after it",
            partial(flushes_reported, browser, before),
            60,
        )
        tried.append(flushes)
        cut = [f for f in flushes if f["dropped"] > 0]
        if cut:
            break
    assert cut, ("talking over the playing answer dropped nothing it had queued", tried)
    assert all(f["nextPlayed"] == 0 for f in cut), cut
    assert browser.execute_script("return window.demo.probe.errors") == []

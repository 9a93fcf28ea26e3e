"""The demo page in a real Chromium against a real worker: a text answer streams, a
spoken turn from a fake microphone is answered and talking over the answer stops it, a
network cut and a page reload mid-answer resume with the text whole and nothing twice.

One browser and one worker for the module (each Chromium start costs seconds)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.processes import WorkerProcess
from tests.wsserver.demo_page.browser import Relay, chromium, poll, spoken_turn_wav

DOCS = Path(__file__).parents[3] / "docs"
QUESTION = "tell me about websockets"


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: docs/ with WSSERVER_DEMO_SCREENSHOTS=1 (to refresh the README's),
    else a temporary folder (a test run leaves the tree as it was)."""
    if os.environ.get("WSSERVER_DEMO_SCREENSHOTS") == "1":
        return DOCS
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def worker() -> Iterator[WorkerProcess]:
    # Slow enough that a test can act in the middle of an answer.
    worker = WorkerProcess(
        "--auth", "none", "--decode-rate", "25", "--answer-tokens", "60", name="demo-browser"
    ).start()
    yield worker
    worker.stop()


@pytest.fixture(scope="module")
def relay(worker: WorkerProcess) -> Iterator[Relay]:
    host, port = worker.http.removeprefix("http://").rsplit(":", 1)
    relay = Relay((host, int(port)))
    yield relay
    relay.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    driver = chromium(spoken_turn_wav(tmp_path_factory.mktemp("microphone")))
    yield driver
    driver.quit()


def fresh_page(browser: WebDriver, relay: Relay) -> None:
    """The demo page on a new session."""
    browser.get(f"http://127.0.0.1:{relay.port}/demo/")
    poll("a session", lambda: connection(browser) in ("connected", "resumed"))
    # The page's own button: it ends the session (which clears the stored resume state).
    browser.find_element(By.ID, "new-session").click()
    poll("a new session", lambda: connection(browser) == "connected" and not answers(browser))


def connection(browser: WebDriver) -> str:
    # Read in the page by script: an element found before a reload would be stale after it.
    state = browser.execute_script("return document.getElementById('connection')?.dataset.state")
    return str(state or "")


def answers(browser: WebDriver) -> list[dict[str, Any]]:
    """The page's assistant turns (what it shows, as it keeps them)."""
    view: list[dict[str, Any]] = browser.execute_script("return window.demo?.view ?? []")
    return [turn for turn in view if turn["role"] == "assistant"]


def ask(browser: WebDriver, text: str) -> None:
    browser.find_element(By.ID, "input").send_keys(text + "\n")


def done(browser: WebDriver, index: int = -1) -> dict[str, Any] | None:
    turns = answers(browser)
    if not turns or turns[index].get("status") is None:
        return None
    return turns[index]


def under_way(browser: WebDriver) -> bool:
    """Some of the one answer arrived, and not its end."""
    turns = answers(browser)
    return len(turns) == 1 and len(turns[0]["text"]) > 10 and turns[0].get("status") is None


def delta_seqs(browser: WebDriver) -> list[int]:
    seqs: list[int] = browser.execute_script("return window.demo.probe.deltaSeqs")
    return seqs


@pytest.fixture(scope="module")
def whole_answer(browser: WebDriver, relay: Relay) -> str:
    """The answer to QUESTION with nothing in the way (the simulated engine is
    deterministic), measured once: the reference the interrupted runs must match."""
    fresh_page(browser, relay)
    ask(browser, QUESTION)
    turn = poll("the answer", lambda: done(browser))
    assert turn["status"] == "completed"
    return str(turn["text"])


def test_page_loads_and_a_text_answer_streams(
    browser: WebDriver, relay: Relay, whole_answer: str, shots: Path
) -> None:
    ready_ms = browser.execute_script(
        "return performance.getEntriesByName('session.ready')[0].startTime"
    )
    print(f"page load to session.ready: {ready_ms:.0f} ms")
    assert len(whole_answer.split()) > 20
    seqs = delta_seqs(browser)
    assert seqs == sorted(set(seqs)), "each delta once, in order"
    text = browser.find_element(By.CSS_SELECTOR, "[data-response-id] .text").text
    assert text == whole_answer.strip()
    assert "generated" in browser.find_element(By.CSS_SELECTOR, "[data-response-id] .usage").text
    browser.save_screenshot(str(shots / "demo-chat.png"))


def test_network_cut_mid_answer_resumes_with_the_text_whole(
    browser: WebDriver, relay: Relay, whole_answer: str
) -> None:
    fresh_page(browser, relay)
    ask(browser, QUESTION)
    poll("the answer under way", lambda: under_way(browser))
    relay.cut()
    turn = poll("the answer", lambda: done(browser))
    assert turn["status"] == "completed"
    assert turn["text"] == whole_answer, "the text whole after the resume"
    readies = browser.execute_script("return window.demo.probe.readies")
    assert [r["resumed"] for r in readies][:2] == [False, True], readies
    seqs = delta_seqs(browser)
    assert seqs == sorted(set(seqs)), "no delta twice"
    assert connection(browser) == "resumed"


def test_reload_mid_answer_resumes_with_the_text_whole(
    browser: WebDriver, relay: Relay, whole_answer: str
) -> None:
    fresh_page(browser, relay)
    ask(browser, QUESTION)
    poll("the answer under way", lambda: under_way(browser))
    browser.refresh()
    turn = poll("the answer", lambda: done(browser))
    assert turn["status"] == "completed"
    assert turn["text"] == whole_answer, "the text whole after the reload"
    readies = browser.execute_script("return window.demo.probe.readies")
    assert readies[0]["resumed"] is True, readies
    seqs = delta_seqs(browser)
    assert seqs == sorted(set(seqs)), "no delta twice"


def test_a_spoken_turn_is_answered_and_talking_over_the_answer_stops_it(
    browser: WebDriver, relay: Relay, shots: Path
) -> None:
    fresh_page(browser, relay)
    browser.find_element(By.ID, "voice-toggle").click()
    # The fake microphone says a sentence every few seconds: the first is answered, the
    # next one talks over that answer (barge-in).
    poll("an answer to speech", lambda: answers(browser), timeout=30)
    turn = poll(
        "an answer stopped by speech",
        lambda: next((t for t in answers(browser) if t.get("status") == "interrupted"), None),
        timeout=40,
    )
    assert "heard" in turn["usage"], "the server knew how much was played"
    browser.save_screenshot(str(shots / "demo-voice.png"))


def test_push_to_talk_sends_one_turn_on_release(browser: WebDriver, relay: Relay) -> None:
    fresh_page(browser, relay)
    talk = browser.find_element(By.ID, "talk")
    ActionChains(browser).click_and_hold(talk).perform()
    poll("the microphone open", lambda: "held" in str(talk.get_attribute("class")))
    time.sleep(4.5)  # the fake microphone says its sentence while the button is held
    assert not answers(browser), "nothing is answered while the button is held"
    ActionChains(browser).release(talk).perform()
    turn = poll("the answer to the held turn", lambda: done(browser), timeout=30)
    assert turn["status"] == "completed"
    errors = browser.execute_script("return window.demo.probe.errors")
    assert errors == [], errors


def test_the_page_keeps_its_last_200_turns(browser: WebDriver, relay: Relay) -> None:
    fresh_page(browser, relay)
    turns = [{"role": "user", "text": f"turn {n}"} for n in range(1000)]
    browser.execute_script(
        "sessionStorage.setItem('wsserver-demo-log', JSON.stringify(arguments[0]))", turns
    )
    browser.refresh()
    poll("the page back", lambda: connection(browser) in ("connected", "resumed"))
    view = browser.execute_script("return window.demo.view")
    assert view == turns[-200:]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chat .turn")) == 200
    ask(browser, "one more")
    poll("the answer", lambda: done(browser))
    view = browser.execute_script("return window.demo.view")
    assert len(view) == 200 and view[0] == turns[-198], "the oldest dropped first"

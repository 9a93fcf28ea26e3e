"""The demo page in a real Chromium against a hostile server: every string a server
sends (text deltas, a response id, tool call names and arguments, error codes and
messages, usage) is shown as text, never parsed as HTML, and an odd response id does
not stop the answer from showing.

The server here is not the worker: it serves the page's own files (the package's
:class:`StaticSite`) and answers the page's WebSocket with a script of hostile events.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from protocol.encoding import JSON_SUBPROTOCOL
from tests.wsserver.demo_page.browser import chromium, poll, spoken_turn_wav
from wsserver.demo_page.static_site import package_site, page_response

MARK = '<img src=x onerror="window.pwned=(window.pwned||[]).concat(1)">'
RESPONSE_ID = 'resp_"] <b>x</b>'
"""A response id that is no valid CSS attribute value: a page that builds a selector
from it throws in the middle of the answer."""


def hostile_events() -> list[dict[str, Any]]:
    arguments = {"city": MARK}
    return [
        # The error first: showing it redraws the whole chat, which would hide a turn
        # whose own redraws failed.
        {"type": "error", "code": MARK, "message": MARK},
        {"type": "response.created", "seq": 1, "response_id": RESPONSE_ID},
        {"type": "response.text.delta", "seq": 2, "response_id": RESPONSE_ID, "delta": MARK},
        {
            "type": "response.tool_call.delta",
            "seq": 3,
            "response_id": RESPONSE_ID,
            "call_id": "call_1",
            "name": MARK,
            "arguments": arguments,
        },
        {"type": "response.text.delta", "seq": 4, "response_id": RESPONSE_ID, "delta": " end"},
        {
            "type": "response.done",
            "seq": 5,
            "response_id": RESPONSE_ID,
            "status": MARK,
            "reason": MARK,
            "usage": {
                "input_tokens": MARK,
                "output_tokens_generated": MARK,
                "output_tokens_delivered": MARK,
            },
        },
    ]


class HostileServer:
    """The page's files over HTTP, and a WebSocket that sends :func:`hostile_events`."""

    def __init__(self) -> None:
        self.site = package_site("/demo/")
        self.events = hostile_events()
        """What the next session gets after its ``session.ready`` (a test may change it)."""
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self.stop = asyncio.Event()
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        assert started.wait(10)

    def _run(self, started: threading.Event) -> None:
        async def main() -> None:
            async with serve(
                self._session,
                "127.0.0.1",
                0,
                process_request=self._http,
                subprotocols=[Subprotocol(JSON_SUBPROTOCOL)],
            ) as server:
                self.port = server.sockets[0].getsockname()[1]
                started.set()
                await self.stop.wait()

        self.loop.run_until_complete(main())

    def _http(self, _connection: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Upgrade"):
            return None
        path = request.path.partition("?")[0]
        if path == "/demo/token":
            body = json.dumps({"token": None, "auth": "none"}).encode()
            return page_response(HTTPStatus.OK, body, "application/json")
        return self.site.answer("GET", path)

    async def _session(self, ws: ServerConnection) -> None:
        async for frame in ws:
            message = json.loads(frame)
            if message.get("type") in ("session.start", "session.resume"):
                ready = {
                    "type": "session.ready",
                    "session_id": "sess_hostile",
                    "resume_token": "wrt_hostile",
                    "last_seq": 0,
                    "heartbeat_interval_ms": 15000,
                }
                await ws.send(json.dumps(ready))
                for event in self.events:
                    await ws.send(json.dumps(event))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)


@pytest.fixture(scope="module")
def server() -> Iterator[HostileServer]:
    server = HostileServer()
    yield server
    server.close()


def test_hostile_server_strings_render_as_text(server: HostileServer, tmp_path: Path) -> None:
    browser = chromium(spoken_turn_wav(tmp_path))
    try:
        browser.get(f"http://127.0.0.1:{server.port}/demo/")
        chat = browser.find_element(By.ID, "chat")
        # The last event (response.done) is in the page's transcript: every event was handled.
        poll(
            "response.done",
            lambda: browser.execute_script(
                "return window.demo.view.some((t) => t.usage !== undefined)"
            ),
            timeout=15,
        )
        assert browser.execute_script("return window.pwned === undefined")
        assert browser.find_elements(By.CSS_SELECTOR, "#chat img, #chat b") == []
        assert MARK in chat.text  # the error line
        turn = browser.find_element(By.CSS_SELECTOR, ".turn.assistant")
        assert MARK + " end" in turn.text
        tool = turn.find_element(By.CSS_SELECTOR, ".tool")
        assert MARK in tool.text
        usage = turn.find_element(By.CSS_SELECTOR, ".usage")
        assert usage.text.count("onerror") == 5
    finally:
        browser.quit()


def test_an_answer_larger_than_session_storage_still_shows(
    server: HostileServer, tmp_path: Path
) -> None:
    """The page keeps its transcript in sessionStorage (a few MiB per origin): an answer
    that outgrows it must go on showing, not stop at the first delta that does not fit."""
    chunk = "x" * 5_300_000
    server.events = [
        {"type": "response.created", "seq": 1, "response_id": "resp_big"},
        {"type": "response.text.delta", "seq": 2, "response_id": "resp_big", "delta": chunk},
        {"type": "response.text.delta", "seq": 3, "response_id": "resp_big", "delta": " end"},
        {
            "type": "response.done",
            "seq": 4,
            "response_id": "resp_big",
            "status": "completed",
            "usage": {
                "input_tokens": 1,
                "output_tokens_generated": 2,
                "output_tokens_delivered": 2,
            },
        },
    ]
    browser = chromium(spoken_turn_wav(tmp_path))
    try:
        browser.get(f"http://127.0.0.1:{server.port}/demo/")
        poll(
            "response.done",
            lambda: browser.execute_script(
                "return window.demo.view.some((t) => t.usage !== undefined)"
            ),
            timeout=30,
        )
        shown = browser.execute_script(
            "const t = document.querySelector('.turn.assistant');"
            "return [t.querySelector('.text').textContent.length,"
            " t.querySelector('.text').textContent.endsWith(' end'),"
            " t.querySelector('.usage') !== null]"
        )
        assert shown == [5_300_004, True, True]
    finally:
        browser.quit()

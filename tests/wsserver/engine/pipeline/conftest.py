"""One loopback speech server per test session (its models load once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.wsserver.engine.pipeline.speech_server import SpeechServer


@pytest.fixture(scope="session")
def speech_server() -> Iterator[SpeechServer]:
    server = SpeechServer()
    yield server
    server.close()

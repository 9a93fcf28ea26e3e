from __future__ import annotations

import pytest

from tests.llama_server import LlamaServerProcess


@pytest.fixture
def tools_llama_address(llama_server: LlamaServerProcess) -> str:
    """llama.cpp's server on SmolLM2 with the shipped tools template: the session's
    shared ``llama_server`` serves with it."""
    return llama_server.address

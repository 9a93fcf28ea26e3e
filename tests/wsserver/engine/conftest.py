from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llama_server import LlamaServerProcess
from wsserver.engine.local_tools import tools_template_path


@pytest.fixture(scope="session")
def tools_llama_address() -> Iterator[str]:
    """llama.cpp's server on SmolLM2 with the shipped tools template (one thread, one
    slot): the shared ``llama_server`` runs the model's own template."""
    pytest.importorskip("xllamacpp")
    server = LlamaServerProcess(parallel=1, extra=("--chat-template", tools_template_path()))
    server.start()
    yield server.address
    server.stop()

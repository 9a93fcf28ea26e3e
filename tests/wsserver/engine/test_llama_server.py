"""The embedded llama.cpp server: its default model, its failures, its program."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import cli_env
from wsserver.engine.llama_server import (
    LlamaServer,
    LlamaServerConfig,
    LlamaServerError,
    default_model_path,
)


def test_the_default_model_is_the_smollm2_packages() -> None:
    path = default_model_path()
    assert path is not None and path.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert Path(path).stat().st_size > 50_000_000


def test_a_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    server = LlamaServer(LlamaServerConfig(model_path=str(tmp_path / "nope.gguf")))
    with pytest.raises(LlamaServerError, match="model file not found"):
        server.start_blocking()
    with pytest.raises(LlamaServerError, match="not started"):
        _ = server.base_url


def test_a_file_that_is_not_a_model_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a gguf file" * 100)
    with pytest.raises(LlamaServerError, match="did not start"):
        LlamaServer(LlamaServerConfig(model_path=str(bogus))).start_blocking()


def test_the_program_refuses_a_missing_model_with_exit_one(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "wsserver.engine.llama_server", "--model-path", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
    )
    assert result.returncode == 1
    assert "error: model file not found" in result.stderr

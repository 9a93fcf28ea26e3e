"""``--engine local``: llama.cpp in the worker's process, answering ``wsserver chat``."""

from __future__ import annotations

import subprocess

from tests.processes import WSSERVER, WorkerProcess, cli_env


def test_serve_on_the_embedded_model_answers_chat() -> None:
    worker = WorkerProcess(
        "--engine", "local", "--upstream-temperature", "0", "--local-context", "2048", name="local"
    ).start(timeout=60)
    try:
        result = subprocess.run(
            [
                *WSSERVER,
                "chat",
                "--url",
                worker.url,
                "--max-output-tokens",
                "12",
                "Which city is the capital of France?",
            ],
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=60,
        )
        stats = worker.stats()
    finally:
        worker.stop()
    assert result.returncode == 0, result.stderr
    answer, summary = result.stdout.strip().rsplit("\n", 1)
    assert "Paris" in answer  # SmolLM2 knows this one at temperature 0
    assert summary.startswith("[completed; tokens in ")
    assert stats["engine"]["requests"] == 1
    assert "engine: local" in "".join(worker.lines)

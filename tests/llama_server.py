"""llama.cpp's server (xllamacpp) with SmolLM2 on a free loopback port, in a subprocess.

Started the way a user starts it (``python -m wsserver.engine.llama_server``), with one
thread, so a test can kill it mid-answer and read its log (``srv stop: cancel task``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.processes import cli_env, watch_output
from tests.redis_server import free_port
from wsserver.engine.local_tools import tools_template_path

TOOLS_TEMPLATE = Path(tools_template_path())
"""The shipped tools-capable ChatML template (``--local-chat-template tools``)."""


class LlamaServerProcess:
    """One llama.cpp server process; its stderr (the server's log) goes to a file."""

    def __init__(
        self,
        port: int | None = None,
        *,
        parallel: int = 2,
        chat_template: Path | None = TOOLS_TEMPLATE,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.port = port or free_port()
        self.parallel = parallel
        template = ("--chat-template", str(chat_template)) if chat_template else ()
        self.extra = (*template, *extra)
        self.process: subprocess.Popen[str] | None = None
        # Kept open for the process's life (closed by stop()).
        self._log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log")  # noqa: SIM115

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI API root the engine is given."""
        return self.address + "/v1"

    def start(self, timeout: float = 60.0) -> LlamaServerProcess:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "wsserver.engine.llama_server",
                "--port",
                str(self.port),
                "--threads",
                "1",
                "--parallel",
                str(self.parallel),
                "--context",
                str(2048 * self.parallel),
                *self.extra,
            ],
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=cli_env(),
        )
        found, _ = watch_output(self.process, r"listening on http://")
        if not found.wait(timeout):
            self.kill()
            raise RuntimeError(f"llama.cpp server did not start:\n{self.log()[-2000:]}")
        return self

    def log(self) -> str:
        """What the server logged so far."""
        return Path(self._log.name).read_text(errors="replace")

    def slots(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self.address + "/slots", timeout=5) as answer:
            slots: list[dict[str, Any]] = json.load(answer)
            return slots

    def busy(self) -> int:
        """Slots decoding now."""
        return sum(1 for slot in self.slots() if slot.get("is_processing"))

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Until no slot decodes (a generous correctness bound, polled)."""
        deadline = time.monotonic() + timeout
        while self.busy():
            if time.monotonic() > deadline:
                raise AssertionError(f"llama.cpp slots still busy after {timeout} s")
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: connections drop as they are."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None
        self._log.close()

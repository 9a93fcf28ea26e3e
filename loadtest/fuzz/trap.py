"""What a hostile schema points at: an HTTP server that counts requests, a canary file.

Nothing a client sends may make the worker fetch a URL or read a file. The
schemas name this loopback server and a temporary file; the server counts
every request it receives (must be 0), and both answer with a canary string
that the fuzz connections look for in everything the worker sends back.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType


class Trap:
    """The counting HTTP server (in a thread) and the canary file."""

    def __init__(self, folder: Path) -> None:
        self.canary = "canary-" + secrets.token_hex(8)
        self.file_canary = "canary-file-" + secrets.token_hex(8)
        self.canary_path = folder / "canary-schema.json"
        self.canary_path.write_text(json.dumps({"type": "string", "const": self.file_canary}))
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()
        trap = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with trap._lock:
                    trap.requests[self.path.split("?")[0][:80]] += 1
                body = json.dumps({"type": "string", "const": trap.canary}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def canaries(self) -> tuple[bytes, ...]:
        """Strings that must never come back from the worker."""
        return (self.canary.encode(), self.file_canary.encode())

    @property
    def request_count(self) -> int:
        """Requests received so far."""
        with self._lock:
            return sum(self.requests.values())

    def __enter__(self) -> Trap:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

"""Bait for schema references that point outside the schema: a URL and a file.

A loopback HTTP server (in a thread, so a worker that blocks its event loop on a
fetch still gets an answer and the test sees it) and a temporary file. Both hold
a schema whose only allowed value is a secret, so a worker that resolved the
reference would put the secret into its error message.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Bait:
    """Where the bait lies, and what reached it."""

    url: str
    file_uri: str
    url_secret: str
    file_secret: str
    requests: list[str] = field(default_factory=list)
    """Paths the HTTP server was asked for."""

    def leaked(self, messages: list[dict[str, object]]) -> bool:
        """Whether either secret appears in anything the client received."""
        text = json.dumps(messages)
        return self.url_secret in text or self.file_secret in text


@contextmanager
def schema_bait(tmp_path: Path) -> Iterator[Bait]:
    """Start the HTTP server and write the file; stop and clean up afterwards."""
    url_secret, file_secret = "url-secret-4f1c", "file-secret-9b2e"
    body = json.dumps({"enum": [url_secret]}).encode()
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"enum": [file_secret]}))
    bait = Bait(
        f"http://127.0.0.1:{server.server_port}/schema.json",
        path.as_uri(),
        url_secret,
        file_secret,
        requests,
    )
    try:
        yield bait
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

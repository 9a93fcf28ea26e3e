"""The demo page's address that ``wsserver serve`` prints must be one a browser can open
and whose Origin the default allowlist (loopback pages) accepts: not ``0.0.0.0`` (not a
loopback origin: every token request is refused), not an IPv6 address without brackets."""

from __future__ import annotations

import pytest

from tests.processes import WorkerProcess
from tests.wsserver.demo_page.test_endpoint import raw_request
from wsserver.demo_page.endpoint import page_url


@pytest.mark.parametrize(
    ("host", "tls", "url"),
    [
        ("127.0.0.1", False, "http://127.0.0.1:8765/demo/"),
        ("localhost", True, "https://localhost:8765/demo/"),
        ("0.0.0.0", False, "http://127.0.0.1:8765/demo/"),
        ("", False, "http://127.0.0.1:8765/demo/"),
        ("::", False, "http://[::1]:8765/demo/"),
        ("::1", False, "http://[::1]:8765/demo/"),
        ("voice.example.com", True, "https://voice.example.com:8765/demo/"),
    ],
)
def test_the_printed_page_address_can_be_opened(host: str, tls: bool, url: str) -> None:
    assert page_url(host, 8765, tls=tls) == url


def test_why_a_wildcard_address_is_no_page_address() -> None:
    """A page opened at http://0.0.0.0:PORT sends that as its Origin: refused."""
    worker = WorkerProcess("--auth", "none", name="demo-attack-url").start()
    try:
        port = worker.http.rsplit(":", 1)[1]
        status, _, _ = raw_request(
            worker.http, "POST /demo/token HTTP/1.1", f"Origin: http://0.0.0.0:{port}"
        )
        assert status == 403
        printed = next(line for line in worker.lines if line.startswith("demo page: "))
        assert printed.split()[2] == page_url("127.0.0.1", int(port), tls=False)
    finally:
        worker.stop()

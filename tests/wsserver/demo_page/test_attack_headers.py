"""The demo's answers header by header, on the wire: each security or caching header
once (a cache or a browser that meets two disagreeing values picks one by its own rules)."""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.processes import WorkerProcess


@pytest.fixture(scope="module")
def worker() -> Iterator[WorkerProcess]:
    worker = WorkerProcess("--auth", "none", name="demo-attack-headers").start()
    yield worker
    worker.stop()


def header_names(worker: WorkerProcess, line: str, *headers: str) -> Counter[str]:
    host, port = worker.http.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        head = "\r\n".join([line, f"Host: {host}:{port}", *headers, "Connection: close", "", ""])
        sock.sendall(head.encode("latin-1"))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    top = data.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    return Counter(line.partition(":")[0].strip().lower() for line in top)


@pytest.mark.parametrize(
    "line",
    ["POST /demo/token HTTP/1.1", "GET /demo/ HTTP/1.1", "GET / HTTP/1.1", "GET /demo/x HTTP/1.1"],
)
def test_every_header_comes_once(worker: WorkerProcess, line: str) -> None:
    names = header_names(worker, line, f"Origin: {worker.http}")
    assert names["cache-control"] == 1, names
    assert names["content-security-policy"] == 1
    assert {name for name, count in names.items() if count > 1} == set()

"""Traces from a real worker, exported by the real OTLP/HTTP exporter to a loopback
receiver: one ``wsserver.response`` span per response, with its outcome and TTFT; an
interrupted response's span says so. Without an endpoint nothing of OpenTelemetry is
even imported; an endpoint without the extra is a clear exit 2."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.processes import WSSERVER, WorkerProcess, cli_env, eventually
from tests.wsserver.telemetry.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.wsserver.telemetry.worker_lines import line_where
from tests.wsserver.wire import RawClient

WORKER = "traced-worker"


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def worker(receiver: OtlpReceiver) -> Iterator[WorkerProcess]:
    process = WorkerProcess(
        "--log-format",
        "json",
        "--otlp-endpoint",
        receiver.url,
        "--decode-rate",
        "400",
        "--answer-tokens",
        "40",
        name=WORKER,
    ).start()
    yield process
    process.stop()


def span_of(receiver: OtlpReceiver, response_id: str) -> list[ReceivedSpan]:
    return [s for s in receiver.spans if s.attributes.get("wsserver.response_id") == response_id]


async def test_one_span_per_response_with_its_outcome(
    worker: WorkerProcess, receiver: OtlpReceiver
) -> None:
    client = await RawClient.connect(worker.url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": "first"})
    first = await client.until("response.done")
    await client.send({"type": "response.create", "input": "second, to be interrupted"})
    await client.until("response.text.delta")
    await client.send({"type": "response.interrupt"})
    second = await client.until("response.done")
    assert second["status"] == "interrupted"
    await client.close()
    ids = (first["response_id"], second["response_id"])
    await eventually(lambda: all(span_of(receiver, i) for i in ids), timeout=15)
    assert set(receiver.paths) == {"/v1/traces"}
    (completed,) = span_of(receiver, first["response_id"])
    (interrupted,) = span_of(receiver, second["response_id"])
    for span in (completed, interrupted):
        assert span.name == "wsserver.response"
        assert span.resource["service.name"] == "wsserver-worker"
        assert span.attributes["wsserver.session_id"] == ready["session_id"]
        assert span.attributes["wsserver.worker"] == WORKER
        assert span.attributes["wsserver.engine"] == "simulated"
        assert span.attributes["wsserver.model"] == "simulated"
        assert span.attributes["wsserver.ttft_ms"] > 0
        assert "first_token" in span.events and span.start_ns < span.end_ns
    assert completed.attributes["wsserver.status"] == "completed"
    assert completed.attributes["wsserver.output_tokens_delivered"] == 40
    assert "interrupt" not in completed.events
    assert interrupted.attributes["wsserver.status"] == "interrupted"
    assert "interrupt" in interrupted.events
    delivered = second["usage"]["output_tokens_delivered"]
    assert interrupted.attributes["wsserver.output_tokens_delivered"] == delivered
    # The span's TTFT is the log line's.
    line = await line_where(worker, event="response.end", response_id=second["response_id"])
    assert interrupted.attributes["wsserver.ttft_ms"] == line["ttft_ms"]


_PROBE = """
import sys
from wsserver.cli.serve import _tracer
from wsserver.worker.server import WorkerServer
from wsserver.worker.settings import Settings
settings = Settings()
assert _tracer(settings) is None
WorkerServer(settings)
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def test_no_endpoint_imports_no_opentelemetry() -> None:
    env = cli_env()
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


# The extra missing, as in an install without it: every opentelemetry import fails.
_WITHOUT_EXTRA = """
import sys
sys.modules["opentelemetry"] = None
from wsserver.cli.main import main
sys.exit(main(["serve", "--port", "0"]))
"""


def test_an_endpoint_that_is_no_url_exits_2() -> None:
    out = subprocess.run(
        [*WSSERVER, "serve", "--port", "0", "--otlp-endpoint", "collector:4318"],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "must be an http:// or https:// url" in out.stderr and "Traceback" not in out.stderr


def test_an_endpoint_without_the_extra_exits_2() -> None:
    env = cli_env(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRA], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "pip install 'wsserver[otel]'" in out.stderr
    assert "Traceback" not in out.stderr and "listening" not in out.stdout

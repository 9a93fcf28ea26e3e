"""A line an engine request logs names its session and response, though the engine's
own task logs it without them; a hostile upstream's error text (a newline and a forged
line, the worker's own API key echoed back) stays inside one line without the key (the
engine scrubs its key from errors; the formatter would again: test_formatters)."""

from __future__ import annotations

import json
import os
from unittest import mock

from tests.processes import WorkerProcess
from tests.wsserver.engine.openai.standin import Reply, StandIn
from tests.wsserver.telemetry.worker_lines import json_lines, line_where
from tests.wsserver.wire import RawClient

UPSTREAM_KEY = "upstream-Key-0d9f8e7c6b5a"
FORGED = '{"ts":"2026-01-01T00:00:00.000+00:00","level":"ERROR","message":"forged"}'


async def test_an_upstream_failure_line_names_the_response_and_hides_the_key() -> None:
    error = {"error": {"message": f"bad request\n{FORGED}\nyour key {UPSTREAM_KEY} is wrong"}}
    body = json.dumps(error).encode()
    upstream = await StandIn(
        [Reply([body], status=400, headers={"Content-Type": "application/json"})]
    ).start()
    with mock.patch.dict(os.environ, {"TELEMETRY_TEST_UPSTREAM_KEY": UPSTREAM_KEY}):
        worker = WorkerProcess(
            "--log-format",
            "json",
            "--engine",
            "openai",
            "--upstream-url",
            upstream.base_url,
            "--upstream-api-key-env",
            "TELEMETRY_TEST_UPSTREAM_KEY",
            "--upstream-retries",
            "0",
            name="engine-lines",
        ).start()
    try:
        client = await RawClient.connect(worker.url)
        ready = await client.start()
        await client.send({"type": "response.create", "input": "hello"})
        done = await client.until("response.done")
        assert done["status"] == "failed"
        line = await line_where(worker, logger="wsserver.engine.openai.generation")
        assert line["level"] == "WARNING" and "failed" in line["message"]
        # The upstream's text reached the line, newline and all, inside its message.
        assert FORGED in line["message"] or "forged" in line["message"], line
        assert line["session_id"] == ready["session_id"]
        assert line["response_id"] == done["response_id"]
        end = await line_where(worker, event="response.end", response_id=done["response_id"])
        assert end["status"] == "failed"
        await client.close()
    finally:
        worker.stop()
        await upstream.stop()
    assert upstream.headers[0]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    output = "".join(worker.lines)
    assert UPSTREAM_KEY not in output
    records = json_lines(worker)
    assert not [r for r in records if r.get("message") == "forged"]
    assert all(r.get("worker") == "engine-lines" for r in records)

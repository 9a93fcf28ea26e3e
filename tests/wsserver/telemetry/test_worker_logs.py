"""A real worker writing JSON lines: each response's end and each session's end is one
line with its usage (the same usage the client's ``response.done`` carried), every line
parses, and a line concerning a session names it and the worker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.processes import WorkerProcess
from tests.wsserver.telemetry.worker_lines import json_lines, line_where
from tests.wsserver.wire import RawClient

WORKER = "telemetry-worker"


@pytest.fixture(scope="module")
def worker() -> Iterator[WorkerProcess]:
    process = WorkerProcess(
        "--log-format",
        "json",
        "--decode-rate",
        "400",
        "--answer-tokens",
        "40",
        # A dropped client's session expires in a second (the other tests close theirs).
        "--resume-window",
        "1",
        name=WORKER,
    ).start()
    yield process
    process.stop()


def usage_of(line: dict[str, object]) -> dict[str, object]:
    keys = ("input_tokens", "output_tokens_generated", "output_tokens_delivered")
    return {k: line[k] for k in keys}


async def test_a_response_end_line_carries_the_usage_of_its_done(worker: WorkerProcess) -> None:
    client = await RawClient.connect(worker.url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": "tell me about logs"})
    done = await client.until("response.done")
    line = await line_where(worker, event="response.end", response_id=done["response_id"])
    assert line["session_id"] == ready["session_id"] and line["worker"] == WORKER
    assert line["status"] == "completed" and line["engine"] == "simulated"
    assert line["level"] == "INFO" and line["logger"] == "wsserver.telemetry"
    done_usage = {k: v for k, v in done["usage"].items() if k != "output_tokens_acknowledged"}
    assert usage_of(line) == done_usage
    assert done_usage["output_tokens_delivered"] == 40
    assert 0 < line["ttft_ms"] <= line["duration_ms"]
    await client.close()


async def test_an_interrupted_response_and_the_session_end(worker: WorkerProcess) -> None:
    client = await RawClient.connect(worker.url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": "first"})
    first = await client.until("response.done")
    await client.send({"type": "response.create", "input": "second, to be interrupted"})
    await client.until("response.text.delta")
    await client.send({"type": "response.interrupt"})
    second = await client.until("response.done")
    assert second["status"] == "interrupted"
    line = await line_where(worker, event="response.end", response_id=second["response_id"])
    assert line["status"] == "interrupted" and line["session_id"] == ready["session_id"]
    assert line["output_tokens_delivered"] == second["usage"]["output_tokens_delivered"]
    await client.close()  # 1000: the session ends
    end = await line_where(worker, event="session.end", session_id=ready["session_id"])
    assert end["reason"] == "ended" and end["departure"] == "client_closed"
    assert end["responses"] == 2 and end["worker"] == WORKER
    for key in ("input_tokens", "output_tokens_generated", "output_tokens_delivered"):
        assert end[key] == first["usage"][key] + second["usage"][key], key
    assert end["duration_ms"] > 0


async def test_a_dropped_session_expires_and_its_unsent_done_still_logs(
    worker: WorkerProcess,
) -> None:
    client = await RawClient.connect(worker.url)
    ready = await client.start()
    await client.send({"type": "response.create", "input": "cut off"})
    created = await client.until("response.created")
    await client.until("response.text.delta")
    # No close frame: the answer finishes for nobody, the session waits a second for a
    # resume, then expires; the response's done was never sent, its line still comes.
    client.abort()
    session = ready["session_id"]
    end = await line_where(worker, event="session.end", session_id=session)
    assert end["reason"] == "expired" and end["departure"] == "connection_lost"
    response = await line_where(worker, event="response.end", session_id=session)
    assert response["response_id"] == created["response_id"]
    assert response["status"] == "completed" and response["output_tokens_generated"] == 40
    assert end["output_tokens_generated"] == response["output_tokens_generated"]
    assert end["responses"] == 1


async def test_every_line_is_json_after_the_banner(worker: WorkerProcess) -> None:
    client = await RawClient.connect(worker.url)
    await client.start()
    await client.send({"type": "response.create", "input": "x"})
    await client.until("response.done")
    await client.close()
    others = [x for x in worker.lines if not x.startswith("{")]
    banner = ("wsserver listening on", "demo page: ")  # printed for the user, not logged
    assert others == [x for x in worker.lines if x.startswith(banner)], others
    assert {r["worker"] for r in json_lines(worker)} == {WORKER}

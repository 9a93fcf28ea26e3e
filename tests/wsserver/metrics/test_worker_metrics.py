"""``GET /metrics`` of a real worker subprocess: each figure moves by what happened.

One worker serves the whole module; each test scrapes before and after what it does
and checks the difference against what the client saw (usage, close codes, counts).
"""

from __future__ import annotations

import asyncio
from typing import Any

from websockets.asyncio.client import connect

from tests.wsserver.audio_fixtures import BYTES_PER_MS, pcm, silence
from tests.wsserver.frontdoor.http import connect_as
from tests.wsserver.metrics.conftest import MeteredWorker
from tests.wsserver.metrics.scrape import get, moved, scrape, value
from tests.wsserver.session.test_tool_calls import PARIS, WEATHER
from tests.wsserver.session.test_voice import Mic, voice
from tests.wsserver.transport.test_realtime_resume import (
    Served,
    answered,
    open_session,
    refused,
    resume_headers,
)
from tests.wsserver.wire import RawClient


async def answer(client: RawClient, **fields: Any) -> dict[str, Any]:
    """Ask for a response and read until its ``response.done``."""
    await client.send({"type": "response.create", **fields})
    return await client.until("response.done")


async def scraped(worker: MeteredWorker) -> Any:
    return await asyncio.to_thread(scrape, worker.base, worker.admin_key)


async def test_a_text_answer_moves_tokens_responses_and_latency_by_its_usage(
    worker: MeteredWorker,
) -> None:
    client = await connect_as(worker.url, key=worker.user_key)
    await client.start()
    before = await scraped(worker)
    done = await answer(client, input="tell me something")
    await asyncio.sleep(0)  # the writer counts right after it sent response.done
    after = await scraped(worker)
    usage = done["usage"]
    generated = usage["output_tokens_generated"]
    assert done["status"] == "completed" and generated > 1
    assert moved(before, after, "wsserver_tokens_generated_total") == generated
    assert (
        moved(before, after, "wsserver_tokens_delivered_total") == usage["output_tokens_delivered"]
    )
    assert moved(before, after, "wsserver_responses_total", status="completed") == 1
    assert moved(before, after, "wsserver_ttft_seconds_count") == 1
    # One chunk per token from the simulated engine: one gap fewer than tokens.
    assert moved(before, after, "wsserver_inter_token_seconds_count") == generated - 1
    assert moved(before, after, "wsserver_tokens_wasted_total") == 0
    assert value(after, "wsserver_sessions", state="attached") >= 1
    assert value(after, "wsserver_connections", state="session") >= 1
    assert value(after, "wsserver_engine_slots") > 0
    assert value(after, "wsserver_engine_tokens_generated_total") >= generated
    assert value(after, "wsserver_store_call_seconds_count", operation="create") >= 1
    await client.close()


async def test_an_interrupt_counts_its_waste_and_its_latency_to_done(
    worker: MeteredWorker,
) -> None:
    client = await connect_as(worker.url, key=worker.user_key)
    await client.start()
    before = await scraped(worker)
    await client.send({"type": "response.create", "input": "a long one", "max_output_tokens": 4096})
    await client.until("response.text.delta")
    await client.send({"type": "response.interrupt"})
    done = await client.until("response.done")
    after = await scraped(worker)
    assert done["status"] == "interrupted"
    usage = done["usage"]
    wasted = usage["output_tokens_generated"] - usage["output_tokens_delivered"]
    assert moved(before, after, "wsserver_responses_total", status="interrupted") == 1
    assert moved(before, after, "wsserver_tokens_wasted_total", status="interrupted") == wasted
    assert (
        moved(before, after, "wsserver_tokens_generated_total") == usage["output_tokens_generated"]
    )
    assert (
        moved(before, after, "wsserver_stop_latency_seconds_count", kind="response.interrupt") == 1
    )
    await client.close()


async def test_a_resume_counts_the_events_it_replays_and_a_refusal_its_code(
    worker: MeteredWorker,
) -> None:
    client = await connect_as(worker.url, key=worker.user_key)
    ready = await client.start()
    created = None
    await client.send({"type": "response.create", "input": "resume me"})
    created = await client.until("response.created")
    done = await client.until("response.done")
    client.abort()
    before = await scraped(worker)
    again = await connect_as(worker.url, key=worker.user_key)
    await again.resume(ready, created["seq"])
    await again.until("session.ready")
    await again.until("response.done")
    bogus = await connect_as(worker.url, key=worker.user_key)
    await bogus.resume({**ready, "resume_token": "not-the-token"}, 0)
    await bogus.until("error")
    after = await scraped(worker)
    assert moved(before, after, "wsserver_resumes_total", outcome="resumed") == 1
    assert moved(before, after, "wsserver_resume_events_replayed_count") == 1
    replayed = done["seq"] - created["seq"]
    assert moved(before, after, "wsserver_resume_events_replayed_sum") == replayed
    refused = moved(before, after, "wsserver_resumes_total") - 1
    assert refused == 1
    assert moved(before, after, "wsserver_resumes_total", outcome="invalid_resume_token") == 1
    await again.close()
    await bogus.close()


async def test_realtime_refusals_are_counted_once_each_by_their_code(
    worker: MeteredWorker,
) -> None:
    served = Served(worker.process, worker.user_key, worker.user_key)
    ws, created = await open_session(served, worker.user_key)
    events = await answered(ws)
    ws.transport.abort()  # dropped: the session waits for its client
    seq = int(events[-1]["event_id"].split("_")[1])
    good = resume_headers(created, events[-1]["event_id"])
    before = await scraped(worker)
    refusals = [
        # Refused by the dialect: its own codes, and a replay it cannot rebuild from.
        ({**good, "X-Wsserver-Last-Event-Id": f"event_{seq}_7"}, "", "invalid_event_id"),
        ({"X-Wsserver-Session": good["X-Wsserver-Session"]}, "", "invalid_resume_request"),
        ({}, "&resume_token=x", "resume_token_in_query"),
        # Refused by the native session, passed on by the dialect: counted there, once.
        ({**good, "X-Wsserver-Last-Event-Id": "event_999_0"}, "", "invalid_seq"),
    ]
    for headers, query, code in refusals:
        error, _close = await refused(served, worker.user_key, headers, query)
        assert error["code"] == code
    after = await scraped(worker)
    for _headers, _query, code in refusals:
        assert moved(before, after, "wsserver_resumes_total", outcome=code) == 1, code
    assert moved(before, after, "wsserver_resumes_total") == len(refusals), (
        before["wsserver_resumes_total"],
        after["wsserver_resumes_total"],
    )
    # Still resumable: the refusals left the session with its client.
    async with connect(
        worker.url + "/v1/realtime?model=m",
        additional_headers={"Authorization": f"Bearer {worker.user_key}", **good},
        compression=None,
    ) as resumed:
        await answered(resumed)
    resumed_after = await scraped(worker)
    assert moved(after, resumed_after, "wsserver_resumes_total", outcome="resumed") == 1


async def test_a_tool_call_counts_emitted_and_answered(worker: MeteredWorker) -> None:
    client = await connect_as(worker.url, key=worker.user_key)
    await client.start(tools=[WEATHER])
    before = await scraped(worker)
    await client.send({"type": "response.create", "input": PARIS})
    call = await client.until("response.tool_call")
    await client.send({"type": "tool.result", "call_id": call["call_id"], "output": {"c": 8}})
    await client.until("tool.result.accepted")
    after = await scraped(worker)
    assert moved(before, after, "wsserver_tool_calls_total", outcome="emitted") == 1
    assert moved(before, after, "wsserver_tool_calls_total", outcome="result") == 1
    assert moved(before, after, "wsserver_tool_calls_total") == 2
    await client.close()


async def test_refusals_are_counted_by_reason_and_metrics_need_an_admin(
    worker: MeteredWorker,
) -> None:
    before = await scraped(worker)
    assert (await asyncio.to_thread(get, worker.base + "/metrics"))[0] == 401
    assert (await asyncio.to_thread(get, worker.base + "/metrics", "wsk_wrong"))[0] == 401
    assert (await asyncio.to_thread(get, worker.base + "/metrics", worker.user_key))[0] == 403
    after = await scraped(worker)
    assert moved(before, after, "wsserver_auth_refusals_total", reason="no_credentials") == 1
    assert moved(before, after, "wsserver_auth_refusals_total", reason="invalid") == 1
    assert moved(before, after, "wsserver_auth_refusals_total", reason="forbidden") == 1
    # The admin listener needs no credential (it listens where only operators reach).
    status, content_type, body = await asyncio.to_thread(get, worker.admin_base + "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    assert "wsserver_responses_total" in body


async def test_a_barge_in_and_a_cancel_are_timed_to_their_done(worker: MeteredWorker) -> None:
    client = await connect_as(worker.url, key=worker.user_key)
    await client.start(audio=voice())
    mic = Mic(client)
    await mic.play(silence(200), realtime=False)
    before = await scraped(worker)
    await client.send({"type": "response.create", "input": "talk to me for a while"})
    await client.until("response.created")
    # Voice right away (not paced: the detector reads the samples, not the clock).
    await mic.play(pcm("speech_hello")[: 600 * BYTES_PER_MS], realtime=False)
    first = await client.until("response.done")
    assert (first["status"], first["reason"]) == ("interrupted", "speech")
    await client.close()
    client = await connect_as(worker.url, key=worker.user_key)
    await client.start()
    await client.send({"type": "response.create", "input": "cancel me"})
    await client.until("response.created")
    await client.send({"type": "response.cancel"})
    second = await client.until("response.done")
    assert second["status"] == "cancelled"
    after = await scraped(worker)
    assert moved(before, after, "wsserver_barge_in_seconds_count") == 1
    cancels = moved(before, after, "wsserver_stop_latency_seconds_count", kind="response.cancel")
    assert cancels == 1
    assert (
        moved(before, after, "wsserver_responses_total", status="interrupted", reason="speech") == 1
    )
    assert (
        moved(before, after, "wsserver_responses_total", status="cancelled", reason="client") == 1
    )
    await client.close()

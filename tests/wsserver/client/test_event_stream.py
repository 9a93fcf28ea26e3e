"""The SDK's event stream: events once, in order, a response collected, then the end."""

from __future__ import annotations

import asyncio

import pytest

from wsserver.client.errors import SessionClosed
from wsserver.client.event_stream import EventStream


def _stream(reason: list[str]) -> EventStream:
    # The error is made when a reader reaches the end, from what is known then.
    return EventStream(lambda: SessionClosed(reason[-1]))


async def test_a_response_is_collected_from_its_events() -> None:
    stream = _stream(["unused"])
    call = {"type": "response.tool_call", "call_id": "call_1", "name": "f", "arguments": {}}
    for event in [
        {"type": "response.created", "response_id": "resp_1"},
        {"type": "response.text.delta", "response_id": "resp_1", "delta": "Hello "},
        {"type": "response.audio.delta", "response_id": "resp_1", "audio": b"\x01\x00"},
        call,
        {"type": "response.output_json.done", "response_id": "resp_1", "value": {"a": 1}},
        {"type": "response.text.delta", "response_id": "resp_1", "delta": "world"},
        {"type": "response.audio.delta", "response_id": "resp_1", "audio": b"\x02\x00"},
        {
            "type": "response.done",
            "response_id": "resp_1",
            "status": "completed",
            "usage": {"output_tokens_delivered": 2},
        },
        {"type": "response.created", "response_id": "resp_2"},
    ]:
        stream.put(event)
    result = await stream.collect_response(1)
    assert (result.response_id, result.status, result.reason) == ("resp_1", "completed", None)
    assert result.text == "Hello world"
    assert result.audio == b"\x01\x00\x02\x00"
    assert result.tool_calls == [call]
    assert result.output_json == {"a": 1}
    assert result.usage == {"output_tokens_delivered": 2}
    kinds = [e["type"] for e in result.events]
    assert "response.audio.delta" not in kinds, "audio is in result.audio only"
    assert kinds[0] == "response.created" and kinds[-1] == "response.done"
    # The next response's events stay for the next reader.
    assert (await stream.next_event(1))["response_id"] == "resp_2"


async def test_a_truncated_response_ends_the_collection() -> None:
    stream = _stream(["unused"])
    stream.put({"type": "response.created", "response_id": "resp_3"})
    stream.put({"type": "response.text.delta", "response_id": "resp_3", "delta": "par"})
    stream.put({"type": "response.truncated", "response_id": "resp_3", "reason": "resume_failed"})
    result = await stream.collect_response(1)
    assert (result.status, result.reason, result.text) == ("truncated", "resume_failed", "par")


async def test_after_the_end_every_reader_gets_the_closed_error() -> None:
    reason = ["first"]
    stream = _stream(reason)
    stream.put({"type": "session.ready"})
    stream.end()
    assert [e async for e in stream.events()] == [{"type": "session.ready"}]
    reason.append("made when read")
    for _ in range(2):
        with pytest.raises(SessionClosed, match="made when read"):
            await stream.next_event(1)


async def test_a_cancel_that_comes_with_an_event_is_not_swallowed() -> None:
    """The event arrives and the reader is cancelled in the same loop turn: the reader
    is cancelled (the event stays for the next one), as a task that is told to stop
    must stop (asyncio.wait_for on Python 3.11 returned the event instead)."""
    stream = EventStream(lambda: SessionClosed("ended"))
    reader = asyncio.create_task(stream.next_event(timeout=30))
    await asyncio.sleep(0)
    stream.put({"type": "response.text.delta"})
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    assert await stream.next_event(timeout=1) == {"type": "response.text.delta"}

"""A client that stops reading: bounded memory, merged deltas, other sessions unaffected."""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from protocol.session import ServerSession
from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, text_of, wait_until
from wsserver.client.session_client import SessionClient

TOKENS = 1500
# Small kernel and transport buffers so a stalled reader backs up into the outbox quickly.
STALL_SETTINGS = {
    "decode_rate": 1000.0,
    "answer_tokens": TOKENS,
    "socket_send_buffer": 8192,
    "write_limit": 4096,
}


async def _reference(url: str, prompt: str) -> str:
    async with SessionClient(url) as client:
        result = await client.ask(prompt)
    return result.text


@pytest.mark.both_engines
async def test_stalled_reader_gets_merged_identical_text_and_others_keep_pace(
    start_server: StartServer,
) -> None:
    bound = 256 * 1024
    server = await start_server(**STALL_SETTINGS, outbox_max_bytes=bound)
    url = url_of(server)
    stalled = await RawClient.connect(url, rcvbuf=4096)
    session_id = (await stalled.start())["session_id"]
    stalled.ws.transport.pause_reading()
    await stalled.send({"type": "response.create", "input": "slow reader"})

    # A healthy session streaming at the same time.
    async with SessionClient(url) as healthy:
        result = await healthy.ask("fast reader")
    healthy_deltas = [e for e in result.events if e["type"] == "response.text.delta"]
    assert result.usage["output_tokens_delivered"] == TOKENS
    # It kept up: its tokens arrived one per frame, not merged into a backlog.
    assert len(healthy_deltas) >= 0.9 * TOKENS

    runtime = server.sessions[session_id]
    await wait_until(lambda: runtime.session.active is None, timeout=30)
    outbox = runtime.session.outbox
    assert outbox.merged > 0, "the stalled reader's deltas were merged"
    assert outbox.peak_bytes <= bound
    assert runtime.transport is not None, "under the bound the connection stays open"

    stalled.ws.transport.resume_reading()
    await stalled.until("response.done", timeout=30)
    deltas = [m for m in stalled.seen if m["type"] == "response.text.delta"]
    assert len(deltas) < TOKENS / 3
    assert text_of(stalled.seen) == await _reference(url, "slow reader")
    seqs = [m["seq"] for m in stalled.seen if "seq" in m]
    assert seqs == list(range(1, len(seqs) + 1))
    await stalled.close()


async def test_past_the_hard_bound_the_client_is_closed_and_resumes_everything(
    start_server: StartServer,
) -> None:
    bound = 4096
    server = await start_server(**STALL_SETTINGS, outbox_max_bytes=bound)
    url = url_of(server)
    stalled = await RawClient.connect(url, rcvbuf=4096)
    ready = await stalled.start()
    session_id = ready["session_id"]
    stalled.ws.transport.pause_reading()
    await stalled.send({"type": "response.create", "input": "slow reader"})
    runtime = server.sessions[session_id]
    # The worker gives up on the connection (close 4000) and keeps the session detached.
    await wait_until(lambda: runtime.transport is None, timeout=30)
    await wait_until(lambda: runtime.session.active is None, timeout=30)
    # Detached, the backlog is numbered into the bounded replay buffer, not the outbox.
    assert runtime.session.outbox.nbytes <= bound + 64

    resumed = await RawClient.connect(url)
    await resumed.send(
        {
            "type": "session.resume",
            "session_id": session_id,
            "resume_token": ready["resume_token"],
            "last_seq": 0,
        }
    )
    assert (await resumed.until("session.ready"))["resumed"] is True
    done = await resumed.until("response.done", timeout=30)
    assert done["status"] == "completed"
    assert text_of(resumed.seen) == await _reference(url, "slow reader")
    seqs = [m["seq"] for m in resumed.seen if "seq" in m]
    assert seqs == list(range(1, len(seqs) + 1))

    stalled.ws.transport.resume_reading()
    code = await stalled.closed_code(timeout=30)
    assert code in (4000, 4002, None)
    await resumed.close()


def _held(*roots: Any) -> int:
    """Bytes of the objects reachable from ``roots`` (each counted once), as CPython sizes them."""
    seen: set[int] = set()
    stack = list(roots)
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, int | float | bool):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | deque | set):
            stack.extend(obj)
        elif not isinstance(obj, str | bytes):
            for cls in type(obj).__mro__:
                for name in getattr(cls, "__slots__", ()):
                    if name != "response_id":  # shared with the response, not held per event
                        stack.append(getattr(obj, name, None))
    return total


def _memory(session: ServerSession) -> dict[str, int]:
    """What the session really holds: outbox, replay buffer, running answer and history."""
    active = session.active
    return {
        "outbox": _held(session.outbox.pending()) - _held([]),
        "replay": _held(list(session.replay.after(session.replay.first_seq - 1))) - _held([]),
        "answer": _held(active.generated) if active is not None else 0,
        "history": _held(session.conversation.turns),
        "answer_chars": active.generated_chars if active is not None else 0,
    }


async def test_a_stalled_reader_costs_no_more_than_the_configured_bounds(
    start_server: StartServer,
) -> None:
    tokens = 10_000
    outbox_bound, replay_bound = 64 * 1024, 128 * 1024
    server = await start_server(
        **{**STALL_SETTINGS, "answer_tokens": tokens, "decode_rate": 5000.0},
        max_output_tokens=tokens,
        outbox_max_bytes=outbox_bound,
        replay_max_bytes=replay_bound,
        grace_period=60,
    )
    stalled = await RawClient.connect(url_of(server), rcvbuf=4096)
    session_id = (await stalled.start())["session_id"]
    stalled.ws.transport.pause_reading()
    await stalled.send({"type": "response.create", "input": "a very long answer"})
    session = server.sessions[session_id].session
    await wait_until(lambda: session.active is not None)
    samples: list[dict[str, int]] = []
    # Sampled as the answer grows: attached (the outbox fills, then close 4000), then
    # detached (the backlog goes to the replay buffer).
    while session.active is not None:
        await asyncio.sleep(0.05)
        samples.append(memory := _memory(session))
        # The bounds count approximate memory: within a tenth, plus one merged delta.
        assert memory["outbox"] <= outbox_bound * 1.1 + 16 * 1024, memory
        assert memory["replay"] <= replay_bound * 1.1, memory
        # The running answer is kept once, as text, not as a string per token.
        assert memory["answer"] <= 1.2 * memory["answer_chars"] + 8 * 1024, memory
    assert len(samples) >= 5, "sampled while the answer grew"
    assert session.last_response is not None
    assert session.last_response.generated_tokens == tokens
    stalled.abort()


async def test_a_slow_reader_learns_it_was_closed_4000_not_1006(
    start_server: StartServer,
) -> None:
    server = await start_server(
        **{**STALL_SETTINGS, "answer_tokens": 20_000, "write_limit": 64 * 1024},
        max_output_tokens=20_000,
        outbox_max_bytes=16 * 1024,
        close_timeout=0.2,
        slow_consumer_close_timeout=60,
    )
    slow = await RawClient.connect(url_of(server), rcvbuf=4096)
    session_id = (await slow.start())["session_id"]
    slow.ws.transport.pause_reading()
    await slow.send({"type": "response.create", "input": "slow reader"})
    runtime = server.sessions[session_id]
    await wait_until(lambda: runtime.transport is None, timeout=30)
    slow.ws.transport.resume_reading()
    # It reads on, a frame at a time and slower than --close-timeout allows for the
    # backlog queued ahead of the close frame (up to --write-limit in the worker).
    try:
        while True:
            await slow.recv(timeout=30)
            await asyncio.sleep(0.005)
    except ConnectionClosed as closed:
        assert closed.rcvd is not None, "the TCP connection was cut before the close frame"
        assert closed.rcvd.code == 4000

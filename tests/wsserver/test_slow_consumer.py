"""A client that stops reading: bounded memory, merged deltas, other sessions unaffected."""

from __future__ import annotations

from tests.wsserver.conftest import StartServer, url_of
from tests.wsserver.wire import RawClient, text_of, wait_until
from wsserver.client import SessionClient

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
    assert runtime.connection is not None, "under the bound the connection stays open"

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
    await wait_until(lambda: runtime.connection is None, timeout=30)
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

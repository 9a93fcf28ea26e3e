"""A Redis Cluster primary fails over to its replica while sessions stream through a worker.

The cluster is this module's own (its topology changes). The replica loses its
replication link first (frozen, its connection dropped) while the primary goes on
acknowledging writes, then the primary is killed with SIGKILL: the failover loses
writes Redis had acknowledged, as asynchronous replication allows, and the test sees
what the server makes of it. (With the link up, a kill -9 on loopback lost nothing:
the replica is a fraction of a millisecond behind.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.processes import WorkerProcess, eventually
from tests.redis_cluster import LocalRedisCluster
from tests.wsserver.wire import RawClient, text_of
from wsserver.store.base import SessionStore, SessionStoreUnavailable, StoreLimits
from wsserver.store.redis_client import RedisClient
from wsserver.store.redis_layout import session_keys
from wsserver.store.selector import open_store

SESSIONS = 9
FLAGS = (
    *("--decode-rate", "150", "--answer-tokens", "400", "--store-flush-ms", "5"),
    *("--drain-timeout", "0.5"),
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRedisCluster]:
    cluster = LocalRedisCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def workers(cluster: LocalRedisCluster) -> Iterator[tuple[WorkerProcess, WorkerProcess]]:
    a = WorkerProcess("--store", cluster.url, *FLAGS, name="a").start()
    b = WorkerProcess("--store", cluster.url, *FLAGS, name="b").start()
    yield a, b
    for worker in (a, b):
        worker.stop()
        text = "".join(worker.lines)
        assert "Traceback" not in text, text


async def _stream(client: RawClient, events: list[dict[str, Any]]) -> None:
    await client.send({"type": "input.text", "text": "tell me about failover"})
    await client.send({"type": "response.create"})
    while True:
        event = await client.recv(30)
        events.append(event)
        if event["type"] == "response.done":
            return


def _deltas(events: list[dict[str, Any]]) -> int:
    return sum(event["type"] == "response.text.delta" for event in events)


async def _stored_seqs(store: SessionStore, session_id: str) -> list[int]:
    return [seq for seq, _payload in (await store.read_log(session_id, 0)).events]


def _node_name(node: Any) -> str:
    return f"127.0.0.1:{node.port}"


async def _get(client: RedisClient, key: str) -> None:
    """One call on the node that serves ``key``, counted against it."""
    await client.call(lambda: client.redis.exists(key), key)


async def _counted_after_failover(client: RedisClient, key: str) -> None:
    """Call on ``key`` until it works: the first calls fail on the dead node, and the
    failure has the client read the slot map again."""
    for _ in range(100):
        try:
            await _get(client, key)
            return
        except SessionStoreUnavailable:
            await asyncio.sleep(0.05)
    raise AssertionError("no call on the promoted replica went through")


async def test_primary_failover_while_sessions_stream(
    cluster: LocalRedisCluster, workers: tuple[WorkerProcess, WorkerProcess]
) -> None:
    a, b = workers
    clients = [await RawClient.connect(a.url) for _ in range(SESSIONS)]
    readies = [await client.start() for client in clients]
    ids = [ready["session_id"] for ready in readies]
    events: list[list[dict[str, Any]]] = [[] for _ in clients]
    streams = [asyncio.create_task(_stream(c, e)) for c, e in zip(clients, events, strict=True)]
    await eventually(lambda: all(_deltas(got) >= 20 for got in events))

    primary = cluster.primary_of(session_keys(ids[0])[0])
    replica = cluster.replica_of(primary)
    # A client of this process that counts connections per node: it has counted every
    # primary before the failover, and must forget the dead one after it.
    counting = RedisClient(
        cluster.url, timeout=1.0, unavailable=SessionStoreUnavailable, max_connections=4
    )
    for sid in ids:
        await _get(counting, session_keys(sid)[0])
    assert _node_name(primary) in counting.counted_nodes, counting.counted_nodes
    victims = {
        i for i, sid in enumerate(ids) if cluster.primary_of(session_keys(sid)[0]) is primary
    }
    # The replica freezes and loses its replication link; the primary goes on
    # acknowledging the worker's writes for 0.5 s, then dies; the replica wakes.
    cluster.cut_off(replica, primary)
    await asyncio.sleep(0.3)
    marks = [got[-1]["seq"] for got in events]  # a client that drops here missed the rest
    await asyncio.sleep(0.2)
    cluster.kill(primary)
    cluster.thaw(replica)

    # Within the node timeout (1 s) nothing has failed over yet: a resume elsewhere,
    # which must read the store, is told to retry, in band.
    during = await RawClient.connect(b.url)
    await during.resume(readies[0], last_seq=marks[0])
    refused = await during.recv()
    assert (refused["type"], refused["code"]) == ("error", "store_unavailable")
    during.abort()

    await eventually(lambda: replica.client().info("replication")["role"] == "master", 20)
    await asyncio.to_thread(cluster.wait_healthy)
    await _counted_after_failover(counting, session_keys(ids[min(victims)])[0])
    assert _node_name(replica) in counting.counted_nodes, counting.counted_nodes
    assert _node_name(primary) not in counting.counted_nodes, counting.counted_nodes
    await counting.close()
    # The worker streamed from memory meanwhile: every answer completed, no error.
    await asyncio.gather(*streams)
    for got in events:
        assert got[-1]["status"] == "completed"
        assert not [event for event in got if event["type"] == "error"]

    # Before the cluster marked the node failed, the other primaries took their writes.
    assert any("session store partly unavailable" in line for line in a.lines), a.lines
    store = open_store(cluster.url, StoreLimits())
    try:
        # The worker's writes resume on the promoted replica and catch up.
        for i, sid in enumerate(ids):
            final = events[i][-1]["seq"]

            async def caught_up(session_id: str = sid, last: int = final) -> bool:
                try:
                    seqs = await _stored_seqs(store, session_id)
                except SessionStoreUnavailable:
                    return False  # this client's first map may still name the dead node
                return bool(seqs) and seqs[-1] == last

            for _ in range(300):
                if await caught_up():
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"session {i} not stored after the failover")
        # What was lost: the victims' events acknowledged while their replica lagged.
        holes = {}
        for i, sid in enumerate(ids):
            seqs = await _stored_seqs(store, sid)
            holes[i] = sorted(set(range(1, seqs[-1] + 1)) - set(seqs))
            # The usage ledger entry came with the response's end, after the failover.
            assert len(await store.usage(sid)) == 1
            record = await store.get(sid)
            assert record is not None
            if i not in victims:
                # Written once each: a shard's failure did not make the others retry.
                assert record.partial_text == text_of(events[i])
            else:
                # What was lost is not papered over: the stored text stops before it.
                assert text_of(events[i]).startswith(record.partial_text)
                assert len(record.partial_text) < len(text_of(events[i]))
        assert all(holes[i] for i in victims), holes
        assert not any(holes[i] for i in set(range(SESSIONS)) - victims), holes
    finally:
        await store.close()

    for client in clients:
        client.abort()
    for i, ready in enumerate(readies):
        again = await RawClient.connect(b.url)
        await again.resume(ready, last_seq=marks[i])
        answer = await again.recv()
        if any(seq > marks[i] for seq in holes[i]):
            # Not replayed with a hole: refused, with what the session held.
            assert (answer["type"], answer["code"]) == ("error", "replay_unavailable")
            assert answer["snapshot"]["last_response"]["status"] == "completed"
        else:
            assert answer["type"] == "session.ready", answer
            replayed = [await again.recv() for _ in range(events[i][-1]["seq"] - marks[i])]
            assert [event["seq"] for event in replayed] == list(
                range(marks[i] + 1, events[i][-1]["seq"] + 1)
            )
        again.abort()
    # A client that saw everything resumes a victim past its hole: nothing to replay.
    victim = min(victims)
    again = await RawClient.connect(b.url)
    await again.resume(readies[victim], last_seq=events[victim][-1]["seq"])
    assert (await again.recv())["type"] == "session.ready"
    await again.send({"type": "input.text", "text": "and after?"})
    await again.send({"type": "response.create"})
    assert (await again.until("response.done", 20))["status"] == "completed"
    again.abort()

"""The router's ``/metrics`` after relayed traffic, a worker's refusal and bad credentials:
a real router and worker subprocess on a real Redis."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.processes import WorkerProcess, eventually
from tests.redis_server import free_port
from tests.wsserver.frontdoor.http import connect_as
from tests.wsserver.metrics.conftest import keys_file
from tests.wsserver.metrics.scrape import get, moved, scrape
from tests.wsserver.router.test_router import (
    FAST,
    RefusingWorker,
    RouterProcess,
    key_ranking_first,
)
from wsserver.registry.base import WorkerInfo
from wsserver.registry.redis import RedisWorkerRegistry


async def test_relayed_bytes_placements_and_refusals_are_counted(
    redis_url: str, tmp_path: Path
) -> None:
    keys, user, admin = keys_file(tmp_path)
    registry = RedisWorkerRegistry(redis_url, ttl=120)
    worker = WorkerProcess("--store", redis_url, *FAST, "--api-keys-file", keys, name="w1")
    worker.start()
    admin_port = free_port()
    router = RouterProcess(redis_url, "--api-keys-file", keys, "--admin-port", str(admin_port))
    refusing = RefusingWorker()
    try:
        base = router.url.replace("ws://", "http://")
        await eventually(lambda: router.stats_as(admin)["live_workers"] == 1)
        before = await asyncio.to_thread(scrape, base, admin)
        client = await connect_as(router.url, key=user)
        await client.start()
        await client.send({"type": "response.create", "input": "through the router"})
        await client.until("response.done")
        # A floor on the bytes that came: each frame's JSON, without the framing.
        received = sum(len(json.dumps(m, separators=(",", ":"))) for m in client.seen)
        await client.close()
        # A worker that refuses (503) ranked first for a session: the next one takes it.
        url = await refusing.start()
        await registry.publish(WorkerInfo("refuser", url, 0, 0, False, 1e12))
        await eventually(lambda: router.stats_as(admin)["live_workers"] == 2)
        live = await registry.live()
        session = key_ranking_first("refuser", live)
        again = await connect_as(
            router.url, key=user, additional_headers={
                "Authorization": f"Bearer {user}", "X-Wsserver-Session": session
            }
        )  # fmt: skip
        await again.close()
        assert (await asyncio.to_thread(get, base + "/metrics"))[0] == 401
        assert (await asyncio.to_thread(get, base + "/metrics", user))[0] == 403
        # The admin listener needs no credential.
        status, _, text = await asyncio.to_thread(get, f"http://127.0.0.1:{admin_port}/metrics")
        assert status == 200 and "wsserver_router_relayed_bytes_total" in text

        def relayed_twice() -> bool:
            after = scrape(base, admin)
            return moved(before, after, "wsserver_router_connections_total") == 2

        await eventually(relayed_twice)
        after = await asyncio.to_thread(scrape, base, admin)
        assert moved(before, after, "wsserver_router_connections_total", outcome="relayed") == 2
        fails = moved(before, after, "wsserver_router_placement_failures_total", kind="refused")
        assert fails == refusing.hits == 1
        down = moved(
            before, after, "wsserver_router_relayed_bytes_total", direction="worker_to_client"
        )
        up = moved(
            before, after, "wsserver_router_relayed_bytes_total", direction="client_to_worker"
        )
        assert down >= received * 0.5 and up > 0, (down, up, received)
        refusals = "wsserver_router_auth_refusals_total"
        assert moved(before, after, refusals, reason="no_credentials") == 1
        assert moved(before, after, refusals, reason="forbidden") == 1
    finally:
        await refusing.stop()
        await registry.close()
        assert router.stop() == 0
        worker.stop()


def test_a_router_with_metrics_off_answers_404(redis_url: str) -> None:
    router = RouterProcess(redis_url, "--metrics", "off")
    try:
        status, _, body = get(router.url.replace("ws://", "http://") + "/metrics")
        assert status == 404 and "metrics are off" in body
    finally:
        assert router.stop() == 0

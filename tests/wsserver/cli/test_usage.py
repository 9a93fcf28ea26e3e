"""``wsserver usage SESSION_ID``: the ledger read from a worker, with the caller's key."""

from __future__ import annotations

import json

from tests.wsserver.client.stand_in import KEY, run_cli, running_stand_in


async def test_usage_sends_the_api_key_to_the_worker() -> None:
    async with running_stand_in() as stand_in:
        http_url = stand_in.url.replace("ws://", "http://")
        code, output = await run_cli(
            "usage", "sess_x", "--url", http_url, "--api-key", KEY, "--json"
        )
        assert code == 0, output
        assert json.loads(output) == {"session_id": "sess_x"}
        (request,) = stand_in.requests
        assert request.headers["Authorization"] == f"Bearer {KEY}"

from __future__ import annotations

from wsserver.engine.http_auth import bearer_header


def test_a_key_is_sent_as_a_bearer_token_and_no_key_sends_no_header() -> None:
    assert bearer_header("sk-test") == {"Authorization": "Bearer sk-test"}
    assert bearer_header("") == {} == bearer_header(None)

"""The SDK's handshake: the URL a resume goes to, its options, what a refusal means."""

from __future__ import annotations

import ssl

import pytest
from websockets.datastructures import Headers
from websockets.exceptions import InvalidStatus
from websockets.http11 import Response

from protocol.encoding import JSON_SUBPROTOCOL
from wsserver.client.auth import Credentials
from wsserver.client.handshake import Handshake, Refusal, close_code_of, refusal, session_url


def test_a_resume_names_its_session_in_the_url() -> None:
    assert session_url("ws://h:1/v1", None) == "ws://h:1/v1"
    assert session_url("ws://h:1/v1", "sess_a") == "ws://h:1/v1?session_id=sess_a"
    assert session_url("ws://h:1/v1?x=1", "sess_a") == "ws://h:1/v1?x=1&session_id=sess_a"


def _refused(status: int, **headers: str) -> InvalidStatus:
    return InvalidStatus(Response(status, "refused", Headers(headers)))


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_final(status: int) -> None:
    assert refusal(_refused(status)) == Refusal(
        credentials_refused=f"handshake refused: http {status}"
    )


@pytest.mark.parametrize("status", [429, 503])
def test_busy_answers_say_when_to_come_back(status: int) -> None:
    assert refusal(_refused(status, **{"Retry-After": "7"})) == Refusal(retry_after=7.0)
    assert refusal(_refused(status)) == Refusal()


def test_other_refusals_are_retried_like_drops() -> None:
    assert refusal(_refused(500, **{"Retry-After": "7"})) == Refusal()


def test_a_connection_that_never_opened_has_no_close_code() -> None:
    assert close_code_of(None) is None


def test_tls_options_only_for_wss_and_no_secret_in_the_log() -> None:
    context = ssl.create_default_context()
    token = ["rt_secret"]
    handshake = Handshake(
        JSON_SUBPROTOCOL,
        Credentials(api_key="wk_key"),
        ssl=context,
        open_timeout=3.0,
        close_timeout=4.0,
        resume_token=lambda: token[0],
    )
    secure = handshake.options("wss://h:1")
    assert secure["ssl"] is context
    assert "ssl" not in handshake.options("ws://h:1")
    assert secure["subprotocols"] == [JSON_SUBPROTOCOL]
    assert secure["additional_headers"] == [("Authorization", "Bearer wk_key")]
    assert (secure["open_timeout"], secure["close_timeout"]) == (3.0, 4.0)
    assert secure["compression"] is None
    assert handshake.secrets() == ("wk_key", "rt_secret")
    token[0] = "rt_renewed"  # read at each log line, not once
    assert handshake.secrets() == ("wk_key", "rt_renewed")

"""The facade's settings and counters live on the part that reads them."""

from __future__ import annotations

from wsserver.client import Backoff, SessionClient
from wsserver.client.delegation import Delegated


def _delegated() -> dict[str, Delegated[object]]:
    return {
        name: attribute
        for name, attribute in vars(SessionClient).items()
        if isinstance(attribute, Delegated)
    }


def test_every_delegated_attribute_is_its_part_s_own() -> None:
    client = SessionClient(["ws://127.0.0.1:1", "ws://127.0.0.1:2"], audio={"sample_rate": 24000})
    delegated = _delegated()
    assert {"reconnect", "backoff", "close_codes", "toolbox", "microphone"} <= set(delegated)
    for name, attribute in delegated.items():
        part = getattr(client, attribute.part)
        assert getattr(client, name) is getattr(part, name), name
    assert client.urls == ("ws://127.0.0.1:1", "ws://127.0.0.1:2")
    assert client.sample_rate == 24000
    assert client.microphone is client._voice.microphone


def test_an_assignment_reaches_the_part_that_reads_it() -> None:
    client = SessionClient("ws://127.0.0.1:1")
    client.reconnect = False
    backoff = Backoff(base=0.5)
    client.backoff = backoff
    client.open_timeout = 2.5
    client.run_tools = False
    assert client._connection.reconnect is False
    assert client._connection.backoff is backoff
    assert client._handshake.options("ws://127.0.0.1:1")["open_timeout"] == 2.5
    assert client._tools.run_tools is False

"""Client addresses behind proxies, and the per-IP key (pure)."""

from __future__ import annotations

import pytest

from wsserver.frontdoor.addresses import address_key, client_address, parse_networks

TRUSTED = parse_networks("127.0.0.0/8, 10.1.0.0/16")


def test_the_peer_is_the_client_without_trusted_proxies() -> None:
    assert client_address("198.51.100.7", ["203.0.113.1"], ()) == "198.51.100.7"
    assert client_address("198.51.100.7", ["203.0.113.1"], TRUSTED) == "198.51.100.7"


def test_trusted_hops_are_walked_from_the_right() -> None:
    # client -> ingress (10.1.0.5) -> router (127.0.0.1) -> worker
    assert client_address("127.0.0.1", ["203.0.113.1, 10.1.0.5"], TRUSTED) == "203.0.113.1"
    # What the client wrote itself, left of the first untrusted hop, is ignored.
    forged = ["1.1.1.1, 203.0.113.1", "10.1.0.5"]
    assert client_address("127.0.0.1", forged, TRUSTED) == "203.0.113.1"
    # Only proxies: the leftmost one the chain knows.
    assert client_address("127.0.0.1", ["10.1.0.9"], TRUSTED) == "10.1.0.9"


def test_odd_values() -> None:
    assert client_address("127.0.0.1", ["garbage"], TRUSTED) == "garbage"
    assert client_address(None, [], TRUSTED) == "unknown"
    assert client_address("::ffff:198.51.100.7", [], TRUSTED) == "198.51.100.7"
    assert client_address("127.0.0.1", ["[2001:db8::1]"], TRUSTED) == "2001:db8::1"


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("198.51.100.7", "198.51.100.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::9", "2001:db8:1:2::/64"),
        ("unknown", "unknown"),
    ],
)
def test_ipv6_clients_are_keyed_by_network(address: str, key: str) -> None:
    assert address_key(address, 64) == key


def test_bad_networks_are_named() -> None:
    with pytest.raises(ValueError, match=r"'10\.0\.0\.0/33'"):
        parse_networks("127.0.0.1, 10.0.0.0/33")
    assert parse_networks("") == ()

"""Client addresses: who is really connecting, and which addresses count as one.

Behind the router (or an ingress) a worker's peer is the proxy, so the client's
address comes from ``X-Forwarded-For`` — believed only from trusted proxies,
walking the list from the right, because anything left of the last trusted hop
was written by the client itself. Per-IP quotas key IPv6 clients by their
network prefix (a /64 by default): one host gets a whole /64 and can rotate
through it at will.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

LOOPBACK = "127.0.0.0/8,::1"
"""The networks of the embedded demo and the benchmarks."""


def parse_networks(text: str) -> tuple[Network, ...]:
    """``"10.0.0.0/8, ::1"`` → networks; ``ValueError`` naming a bad entry."""
    networks: list[Network] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"not an address or network: {entry!r}") from None
    return tuple(networks)


def parse_address(text: str) -> Address | None:
    """An address, or ``None`` for anything else (``unknown``, a unix socket path)."""
    try:
        address = ipaddress.ip_address(text.strip().removeprefix("[").removesuffix("]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # ::ffff:1.2.3.4 on a dual-stack socket is the IPv4 client 1.2.3.4.
        return address.ipv4_mapped
    return address


def in_networks(address: Address | None, networks: Iterable[Network]) -> bool:
    """Whether ``address`` lies in one of ``networks``."""
    return address is not None and any(address in network for network in networks)


def client_address(
    peer: str | None, forwarded_for: Sequence[str], trusted: Sequence[Network]
) -> str:
    """The client's address: ``peer``, or what trusted proxies say it forwarded.

    ``forwarded_for`` holds the ``X-Forwarded-For`` header values in order (each may
    list several hops). Unparseable addresses stop the walk, so they never skip a hop.
    """
    hops = [hop.strip() for value in forwarded_for for hop in value.split(",") if hop.strip()]
    current = peer or "unknown"
    while hops and in_networks(parse_address(current), trusted):
        current = hops.pop()
    address = parse_address(current)
    return str(address) if address is not None else current


def address_key(address: str, ipv6_prefix: int) -> str:
    """The per-IP quota key: the IPv4 address, or the IPv6 address's network."""
    parsed = parse_address(address)
    if isinstance(parsed, ipaddress.IPv6Address) and ipv6_prefix < 128:
        return str(ipaddress.IPv6Network((parsed, ipv6_prefix), strict=False))
    return str(parsed) if parsed is not None else address

"""The front door's checks of a WebSocket handshake, for the worker and the router.

Both know a handshake as plain values — the peer's address, the
``X-Forwarded-For`` and ``Origin`` header values, the principal (``None`` while
anonymous) — so the same checks run on a websockets request in the worker and
on the router's own parsed head. In order: the handshake rate of the address,
the Origin allowlist, the connection quotas.
"""

from __future__ import annotations

from collections.abc import Sequence
from http import HTTPStatus
from typing import Annotated, Any

from pydantic import AfterValidator

from wsserver.frontdoor.addresses import Network, client_address, parse_networks
from wsserver.frontdoor.origin import OriginPolicy, parse_origins
from wsserver.frontdoor.quotas import Client, ConnectionQuota, Quotas, Refusal

ORIGIN_NOT_ALLOWED = "origin_not_allowed"


def _valid_origins(text: str) -> str:
    parse_origins(text)
    return text


def _valid_networks(text: str) -> str:
    parse_networks(text)
    return text


OriginsSetting = Annotated[str, AfterValidator(_valid_origins)]
"""A settings field holding an Origin allowlist, checked at startup."""
NetworksSetting = Annotated[str, AfterValidator(_valid_networks)]
"""A settings field holding comma-separated networks, checked at startup."""


class FrontDoor:
    """Origin allowlist and quotas, behind trusted proxies."""

    __slots__ = ("origins", "quotas", "trusted")

    def __init__(self, origins: OriginPolicy, quotas: Quotas, trusted: Sequence[Network]) -> None:
        self.origins = origins
        self.quotas = quotas
        self.trusted = tuple(trusted)

    def client(
        self, peer: str | None, forwarded_for: Sequence[str], principal: str | None
    ) -> Client:
        """Who is connecting: the address trusted proxies vouch for, and the principal."""
        return self.quotas.client(client_address(peer, forwarded_for, self.trusted), principal)

    def handshake(self, client: Client, origins: list[str]) -> Refusal | None:
        """Check a handshake before the upgrade; a refusal to answer with, or ``None``."""
        refusal = self.quotas.handshake(client)
        if refusal is not None:
            return refusal
        if not self.origins.allows(origins):
            self.quotas.refused[ORIGIN_NOT_ALLOWED] += 1
            return Refusal(
                HTTPStatus.FORBIDDEN, ORIGIN_NOT_ALLOWED, "this origin may not open websockets"
            )
        return None

    def connect(self, client: Client) -> ConnectionQuota | Refusal:
        """Count a connection whose handshake completed."""
        return self.quotas.connect(client)


def peer_host(address: Any) -> str | None:
    """The host of a socket's peer address (``(host, port, ...)``), if it has one."""
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        return address[0]
    return None

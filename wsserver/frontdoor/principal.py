"""Who a request comes from, as the authenticator decided."""

from __future__ import annotations

import enum
from dataclasses import dataclass

ANONYMOUS_ID = "anonymous"
"""The principal of every request when authentication is off (``--auth none``)."""


def reserved_principal(name: str) -> bool:
    """Whether ``name`` may not name an authenticated principal: the open server's
    principal, the quota key of anonymous clients (``anonymous@ADDRESS``), or a name with
    the ``#`` that separates a client token's quota key from its principal."""
    return name == ANONYMOUS_ID or name.startswith(ANONYMOUS_ID + "@") or "#" in name


class AuthMethod(enum.StrEnum):
    """How a principal proved who it is."""

    NONE = "none"
    API_KEY = "api_key"
    JWT = "jwt"
    CLIENT_TOKEN = "client_token"


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller and what it may do."""

    id: str
    """The name sessions belong to (an API key's principal, a JWT's ``sub``)."""
    method: AuthMethod
    admin: bool = False
    """May read ``/stats`` and any ``/usage/ID``, and mint client tokens for anyone."""
    can_start: bool = True
    """May open new sessions (a client token can be limited to resuming)."""
    max_sessions: int | None = None
    """Client tokens: sessions the token may open in its life (across workers)."""
    token_id: str | None = None
    """Client tokens: the token's id, the key of its session count in the store."""
    expires_at: float | None = None
    """Unix time after which the credential no longer opens or resumes sessions."""

    @property
    def can_mint(self) -> bool:
        """Only a backend's credential (an API key or a JWT) may mint client tokens."""
        return self.method in (AuthMethod.API_KEY, AuthMethod.JWT, AuthMethod.NONE)


ANONYMOUS = Principal(ANONYMOUS_ID, AuthMethod.NONE, admin=True)
"""With authentication off, everyone is the same principal, with every right."""


@dataclass(frozen=True, slots=True)
class Admission:
    """A handshake the front door let in: who, and from which address.

    Computed once per request in ``WorkerServer._admit`` (the one place where
    per-principal and per-IP checks hook in).
    """

    principal: Principal
    client_ip: str

"""Client tokens: short-lived credentials a backend mints for a browser or an app.

A token is ``wct_<payload>.<signature>``: the payload is base64url JSON
(``sub`` the principal, ``exp``, ``iat``, ``jti`` the token id, ``ms`` the
sessions it may open, ``st`` whether it may open any), the signature
HMAC-SHA256 over ``wct_<payload>`` with the configured secret. Every worker and
router holding the secret verifies a token by itself, without the store; only
the count of sessions a token opened lives in the store (so ``max_sessions``
holds across workers). All characters are HTTP token characters, so a browser
can offer the token as a WebSocket subprotocol entry.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

from wsserver.frontdoor.errors import CredentialRejected
from wsserver.frontdoor.principal import AuthMethod, Principal

TOKEN_PREFIX = "wct_"
MAX_TOKEN_CHARS = 2048
MIN_SECRET_BYTES = 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class ClientTokenClaims:
    """What a client token says about its bearer."""

    principal: str
    expires_at: float
    issued_at: float
    token_id: str
    max_sessions: int
    can_start: bool

    def principal_of(self) -> Principal:
        """The principal a request bearing this token acts as."""
        return Principal(
            self.principal,
            AuthMethod.CLIENT_TOKEN,
            can_start=self.can_start,
            max_sessions=self.max_sessions,
            token_id=self.token_id,
            expires_at=self.expires_at,
        )


class ClientTokenSigner:
    """Mints and verifies client tokens with one shared secret."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(f"a client token secret needs at least {MIN_SECRET_BYTES} bytes")
        self._secret = secret

    def _sign(self, head: str) -> str:
        return _b64(hmac.new(self._secret, head.encode("ascii"), hashlib.sha256).digest())

    def mint(
        self,
        principal: str,
        *,
        ttl_s: float,
        max_sessions: int = 1,
        can_start: bool = True,
        now: float | None = None,
    ) -> tuple[str, ClientTokenClaims]:
        """A new token for ``principal``, valid ``ttl_s`` seconds from ``now``."""
        issued = time.time() if now is None else now
        claims = ClientTokenClaims(
            principal,
            expires_at=round(issued + ttl_s, 3),
            issued_at=round(issued, 3),
            token_id=secrets.token_urlsafe(12),
            max_sessions=max_sessions,
            can_start=can_start,
        )
        body = {
            "sub": claims.principal,
            "exp": claims.expires_at,
            "iat": claims.issued_at,
            "jti": claims.token_id,
            "ms": claims.max_sessions,
            "st": claims.can_start,
        }
        head = TOKEN_PREFIX + _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{head}.{self._sign(head)}", claims

    def verify(self, token: str, *, now: float | None = None) -> ClientTokenClaims:
        """The claims of a genuine, unexpired token; ``CredentialRejected`` otherwise."""
        if len(token) > MAX_TOKEN_CHARS or not token.startswith(TOKEN_PREFIX):
            raise CredentialRejected("malformed client token")
        head, dot, signature = token.rpartition(".")
        if not dot or not hmac.compare_digest(self._sign(head), signature):
            raise CredentialRejected("client token signature does not match")
        try:
            body = json.loads(_unb64(head.removeprefix(TOKEN_PREFIX)))
            claims = ClientTokenClaims(
                principal=str(body["sub"]),
                expires_at=float(body["exp"]),
                issued_at=float(body["iat"]),
                token_id=str(body["jti"]),
                max_sessions=int(body["ms"]),
                can_start=bool(body["st"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            # Signed by us but unreadable: a secret shared with something else.
            raise CredentialRejected("malformed client token") from exc
        if claims.expires_at <= (time.time() if now is None else now):
            raise CredentialRejected("client token expired")
        return claims

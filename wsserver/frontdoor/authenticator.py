"""Who is calling: the one check every handshake and HTTP request goes through.

Credentials come from ``Authorization: Bearer <credential>`` or, for browsers that
cannot set headers on a WebSocket, from a subprotocol entry
``wsserver.token.<credential>`` offered after the encoding subprotocol. A
credential in the URL query is refused outright: proxies and access logs keep
query strings. What a credential is follows from its form: ``wct_…`` a client
token, a three-part ``eyJ…`` a JWT, anything else an API key.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import parse_qs

from protocol.encoding import TOKEN_SUBPROTOCOL_PREFIX
from wsserver.frontdoor.api_keys import ApiKeyTable
from wsserver.frontdoor.client_tokens import TOKEN_PREFIX, ClientTokenSigner
from wsserver.frontdoor.config import FrontDoorSettings, is_loopback
from wsserver.frontdoor.errors import CredentialRejected, FrontDoorConfigError
from wsserver.frontdoor.jwt_auth import JwtVerifier, looks_like_jwt
from wsserver.frontdoor.principal import ANONYMOUS, AuthMethod, Principal

log = logging.getLogger("wsserver.frontdoor")

CREDENTIAL_QUERY_KEYS = frozenset(
    {"token", "access_token", "api_key", "apikey", "key", "client_token", "authorization", "jwt"}
)
MAX_CREDENTIAL_CHARS = 8192
REALM = "wsserver"


@dataclass(frozen=True, slots=True)
class AuthRefusal:
    """Why a request is not let in: HTTP 401 (who are you?) or 403 (not you)."""

    status: HTTPStatus
    message: str

    @property
    def error(self) -> str:
        """The JSON body's ``error``: ``unauthorized`` or ``forbidden``."""
        return "unauthorized" if self.status == HTTPStatus.UNAUTHORIZED else "forbidden"

    @property
    def www_authenticate(self) -> str:
        """The ``WWW-Authenticate`` header (RFC 6750's error names)."""
        if self.status == HTTPStatus.FORBIDDEN:
            return f'Bearer realm="{REALM}", error="insufficient_scope"'
        if self.message.startswith("no credentials"):
            return f'Bearer realm="{REALM}"'
        return f'Bearer realm="{REALM}", error="invalid_token"'

    def body(self) -> dict[str, str]:
        """The JSON body of the refusal."""
        return {"error": self.error, "message": self.message}


def unauthorized(message: str) -> AuthRefusal:
    """A 401 refusal."""
    return AuthRefusal(HTTPStatus.UNAUTHORIZED, message)


def forbidden(message: str) -> AuthRefusal:
    """A 403 refusal."""
    return AuthRefusal(HTTPStatus.FORBIDDEN, message)


def token_subprotocols(offered: str | None) -> list[str]:
    """The credentials among a ``Sec-WebSocket-Protocol`` header's entries."""
    if not offered:
        return []
    entries = (entry.strip() for entry in offered.split(","))
    prefix = TOKEN_SUBPROTOCOL_PREFIX
    return [entry[len(prefix) :] for entry in entries if entry.startswith(prefix)]


class Authenticator:
    """Turns a request's credential into a :class:`Principal`, or refuses it."""

    def __init__(
        self,
        *,
        required: bool,
        keys: ApiKeyTable | None = None,
        jwt: JwtVerifier | None = None,
        tokens: ClientTokenSigner | None = None,
    ) -> None:
        self.required = required
        self.keys = keys
        self.jwt = jwt
        self.tokens = tokens

    @classmethod
    def from_settings(cls, settings: FrontDoorSettings, host: str) -> Authenticator:
        """The authenticator the settings describe; ``FrontDoorConfigError`` if unusable."""
        required = settings.auth_required(host)
        if not required:
            if not is_loopback(host):
                log.warning(
                    "authentication is off (--auth none) and listening on %s: anyone who can "
                    "reach this port can open sessions and read /stats",
                    host or "every address",
                )
            return cls(required=False)
        keys = ApiKeyTable(settings.api_keys_file) if settings.api_keys_file else None
        algorithms = (
            frozenset(a.strip() for a in settings.jwt_algorithms.split(",") if a.strip()) or None
        )
        if algorithms is not None and "none" in {a.lower() for a in algorithms}:
            raise FrontDoorConfigError("the JWT algorithm 'none' is never allowed")
        verifier = None
        if settings.jwt_secret_file and settings.jwt_jwks_file:
            raise FrontDoorConfigError("--jwt-secret-file and --jwt-jwks-file exclude each other")
        if settings.jwt_secret_file:
            verifier = JwtVerifier(
                secret=read_secret(settings.jwt_secret_file, "JWT secret"),
                audience=settings.jwt_audience,
                issuer=settings.jwt_issuer,
                algorithms=algorithms,
            )
        elif settings.jwt_jwks_file:
            verifier = JwtVerifier.from_jwks_file(
                settings.jwt_jwks_file,
                audience=settings.jwt_audience,
                issuer=settings.jwt_issuer,
                algorithms=algorithms,
            )
        tokens = None
        if settings.client_token_secret_file:
            tokens = ClientTokenSigner(
                read_secret(settings.client_token_secret_file, "client token secret")
            )
        return cls(required=True, keys=keys, jwt=verifier, tokens=tokens)

    def authenticate(
        self, *, authorization: str | None, subprotocols: str | None, query: str
    ) -> Principal | AuthRefusal:
        """The principal of a request, from its headers; never logs the credential."""
        if query and CREDENTIAL_QUERY_KEYS & {k.lower() for k in parse_qs(query)}:
            return unauthorized(
                "credentials in the URL query are refused: send 'Authorization: Bearer' or "
                f"a '{TOKEN_SUBPROTOCOL_PREFIX}<token>' subprotocol"
            )
        if not self.required:
            return ANONYMOUS
        presented: list[str] = token_subprotocols(subprotocols)
        if authorization:
            scheme, _, credential = authorization.strip().partition(" ")
            if scheme.lower() != "bearer" or not credential.strip():
                return unauthorized("the Authorization header must be 'Bearer <credential>'")
            presented.append(credential.strip())
        if not presented:
            return unauthorized("no credentials: send 'Authorization: Bearer <credential>'")
        if len(set(presented)) > 1:
            return unauthorized("more than one credential presented")
        credential = presented[0]
        if len(credential) > MAX_CREDENTIAL_CHARS:
            return unauthorized("credential too long")
        try:
            return self._verify(credential)
        except CredentialRejected as exc:
            return unauthorized(str(exc))

    def _verify(self, credential: str) -> Principal:
        if credential.startswith(TOKEN_PREFIX):
            if self.tokens is None:
                raise CredentialRejected("client tokens are not enabled on this server")
            return self.tokens.verify(credential).principal_of()
        if looks_like_jwt(credential):
            if self.jwt is None:
                raise CredentialRejected("JWTs are not accepted by this server")
            return self.jwt.verify(credential)
        if self.keys is not None:
            entry = self.keys.lookup(credential)
            if entry is not None:
                return Principal(entry.principal, AuthMethod.API_KEY, admin=entry.admin)
        raise CredentialRejected("unknown API key")


def read_secret(path: str, what: str) -> bytes:
    """A secret from a file (a trailing newline dropped); at least 32 bytes."""
    try:
        with open(path, "rb") as file:
            secret = file.read().rstrip(b"\r\n")
    except OSError as exc:
        raise FrontDoorConfigError(f"cannot read the {what} file {path}: {exc}") from exc
    if len(secret) < 32:
        raise FrontDoorConfigError(f"the {what} in {path} is shorter than 32 bytes")
    return secret

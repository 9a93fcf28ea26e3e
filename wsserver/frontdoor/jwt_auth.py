"""JWTs from an identity provider: a shared HS256 secret, or public keys from a JWKS file.

The allowed algorithms are pinned by the kind of key (HMAC ones for a secret,
RSA/EC ones for a JWKS), so a token can never pick its own (``alg: none``, or
an HMAC "signed" with a public key). ``exp``, ``aud`` and ``sub`` are required
and checked; ``sub`` is the principal.
"""

from __future__ import annotations

import json
from typing import Any

import jwt

from wsserver.frontdoor.errors import CredentialRejected, FrontDoorConfigError
from wsserver.frontdoor.principal import AuthMethod, Principal, reserved_principal

HMAC_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})
PUBLIC_KEY_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
MAX_JWT_CHARS = 8192
LEEWAY_S = 30.0
"""Clock skew tolerated on ``exp``/``nbf`` between the issuer and us."""


def looks_like_jwt(credential: str) -> bool:
    """Three base64url parts, the first a JSON object (``eyJ`` is ``{"``)."""
    return credential.startswith("eyJ") and credential.count(".") == 2


class JwtVerifier:
    """Checks JWTs against one secret or one JWKS."""

    def __init__(
        self,
        *,
        secret: bytes | None = None,
        jwks: dict[str, Any] | None = None,
        audience: str,
        issuer: str = "",
        algorithms: frozenset[str] | None = None,
    ) -> None:
        if (secret is None) == (jwks is None):
            raise FrontDoorConfigError("a JWT verifier needs a secret or a JWKS, not both")
        allowed = HMAC_ALGORITHMS if secret is not None else PUBLIC_KEY_ALGORITHMS
        chosen = algorithms or (frozenset({"HS256"}) if secret is not None else allowed)
        if not chosen <= allowed:
            kind = "a shared secret" if secret is not None else "a JWKS"
            bad = ", ".join(sorted(chosen - allowed))
            raise FrontDoorConfigError(f"JWT algorithms {bad} cannot be used with {kind}")
        self.algorithms = sorted(chosen)
        self.audience = audience
        self.issuer = issuer
        self._secret = secret
        self._keys: dict[str | None, Any] = {}
        if jwks is not None:
            try:
                keyset = jwt.PyJWKSet.from_dict(jwks)
            except jwt.PyJWTError as exc:
                raise FrontDoorConfigError(f"unusable JWKS: {exc}") from exc
            for key in keyset.keys:
                self._keys[key.key_id] = key.key
            if not self._keys:
                raise FrontDoorConfigError("the JWKS has no usable key")

    @classmethod
    def from_jwks_file(
        cls, path: str, *, audience: str, issuer: str = "", algorithms: frozenset[str] | None = None
    ) -> JwtVerifier:
        """A verifier for the public keys in a JWKS file (``{"keys": [...]}``)."""
        try:
            with open(path, encoding="utf-8") as file:
                jwks = json.load(file)
        except (OSError, ValueError) as exc:
            raise FrontDoorConfigError(f"cannot read the JWKS file {path}: {exc}") from exc
        return cls(jwks=jwks, audience=audience, issuer=issuer, algorithms=algorithms)

    def _key_for(self, token: str) -> Any:
        if self._secret is not None:
            return self._secret
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError as exc:
            raise CredentialRejected("malformed JWT") from exc
        if kid in self._keys:
            return self._keys[kid]
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        raise CredentialRejected("JWT signed with an unknown key")

    def verify(self, token: str) -> Principal:
        """The principal (``sub``) of a valid JWT; ``CredentialRejected`` otherwise."""
        if len(token) > MAX_JWT_CHARS:
            raise CredentialRejected("JWT too long")
        key = self._key_for(token)
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=self.algorithms,
                audience=self.audience,
                issuer=self.issuer or None,
                leeway=LEEWAY_S,
                options={"require": ["exp", "sub", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise CredentialRejected("JWT expired") from None
        except jwt.InvalidAudienceError:
            raise CredentialRejected("JWT audience does not match") from None
        except jwt.PyJWTError as exc:
            # PyJWT's messages name claims and algorithms, never the token itself.
            raise CredentialRejected(f"invalid JWT: {exc}") from None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject or len(subject) > 128:
            raise CredentialRejected("JWT sub must be a non-empty string")
        if reserved_principal(subject):
            raise CredentialRejected("JWT sub names a reserved principal")
        # The same leeway as at the handshake, so a session.start just after it agrees.
        return Principal(subject, AuthMethod.JWT, expires_at=float(claims["exp"]) + LEEWAY_S)

"""Credentials of every kind for the front-door tests, written to a temporary folder."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from wsserver.frontdoor.api_keys import key_line, new_api_key


@dataclass
class Credentials:
    """Keys of two principals and an admin, and the files a server reads them from."""

    folder: Path
    alice_key: str
    bob_key: str
    admin_key: str
    jwt_secret: bytes
    token_secret: bytes
    rsa_key: rsa.RSAPrivateKey
    ec_key: ec.EllipticCurvePrivateKey

    @property
    def keys_file(self) -> str:
        return str(self.folder / "keys")

    @property
    def jwt_secret_file(self) -> str:
        return str(self.folder / "jwt-secret")

    @property
    def token_secret_file(self) -> str:
        return str(self.folder / "token-secret")

    @property
    def jwks_file(self) -> str:
        return str(self.folder / "jwks.json")

    def settings(self, *, jwt_mode: str = "secret", **extra: Any) -> dict[str, Any]:
        """Server settings with keys, client tokens and JWTs (a secret, or the JWKS)."""
        fields: dict[str, Any] = {
            "api_keys_file": self.keys_file,
            "client_token_secret_file": self.token_secret_file,
        }
        if jwt_mode == "secret":
            fields["jwt_secret_file"] = self.jwt_secret_file
        elif jwt_mode == "jwks":
            fields["jwt_jwks_file"] = self.jwks_file
        return {**fields, **extra}

    def hs256(self, sub: str = "carol", *, ttl: float = 300, **claims: Any) -> str:
        payload = {"sub": sub, "aud": "wsserver", "exp": int(time.time() + ttl), **claims}
        return jwt.encode(payload, self.jwt_secret, algorithm="HS256")

    def rs256(self, sub: str = "carol", *, ttl: float = 300, **claims: Any) -> str:
        payload = {"sub": sub, "aud": "wsserver", "exp": int(time.time() + ttl), **claims}
        return jwt.encode(payload, self.rsa_key, algorithm="RS256", headers={"kid": "rsa-1"})

    def es256(self, sub: str = "carol", *, ttl: float = 300) -> str:
        payload = {"sub": sub, "aud": "wsserver", "exp": int(time.time() + ttl)}
        return jwt.encode(payload, self.ec_key, algorithm="ES256", headers={"kid": "ec-1"})


def make_credentials(folder: Path) -> Credentials:
    """Fresh keys and secrets under ``folder``."""
    creds = Credentials(
        folder=folder,
        alice_key=new_api_key(),
        bob_key=new_api_key(),
        admin_key=new_api_key(),
        jwt_secret=os.urandom(32).hex().encode(),
        token_secret=os.urandom(32).hex().encode(),
        rsa_key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec_key=ec.generate_private_key(ec.SECP256R1()),
    )
    lines = [
        "# principals of the tests",
        key_line("alice", creds.alice_key),
        key_line("bob", creds.bob_key),
        key_line("ops", creds.admin_key, admin=True),
    ]
    (folder / "keys").write_text("\n".join(lines) + "\n")
    (folder / "jwt-secret").write_bytes(creds.jwt_secret + b"\n")
    (folder / "token-secret").write_bytes(creds.token_secret)
    rsa_jwk = json.loads(RSAAlgorithm.to_jwk(creds.rsa_key.public_key()))
    ec_jwk = json.loads(ECAlgorithm.to_jwk(creds.ec_key.public_key()))
    rsa_jwk.update(kid="rsa-1", use="sig", alg="RS256")
    ec_jwk.update(kid="ec-1", use="sig", alg="ES256")
    (folder / "jwks.json").write_text(json.dumps({"keys": [rsa_jwk, ec_jwk]}))
    return creds

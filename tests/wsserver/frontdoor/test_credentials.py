"""Credential checks without a server: keys, client tokens, JWTs, the authenticator, redaction."""

from __future__ import annotations

import base64
import json
import logging
import os
import sys
import time
from http import HTTPStatus
from pathlib import Path

import jwt
import pytest

from tests.wsserver.frontdoor.credentials import Credentials
from wsserver.frontdoor.api_keys import ApiKeyTable, hash_api_key, key_line, parse_keys
from wsserver.frontdoor.authenticator import Authenticator, AuthRefusal
from wsserver.frontdoor.client_tokens import ClientTokenSigner
from wsserver.frontdoor.config import FrontDoorSettings
from wsserver.frontdoor.errors import CredentialRejected, FrontDoorConfigError
from wsserver.frontdoor.jwt_auth import JwtVerifier
from wsserver.frontdoor.principal import ANONYMOUS, AuthMethod, Principal
from wsserver.frontdoor.redaction import RedactingFilter, redact


def authenticator(creds: Credentials, **extra: str) -> Authenticator:
    return Authenticator.from_settings(FrontDoorSettings(**creds.settings(**extra)), "127.0.0.1")


def bearer(auth: Authenticator, credential: str) -> Principal | AuthRefusal:
    return auth.authenticate(authorization=f"Bearer {credential}", subprotocols=None, query="")


# -- API keys ---------------------------------------------------------------


def test_keys_file_holds_hashes_only(creds: Credentials) -> None:
    text = Path(creds.keys_file).read_text()
    assert creds.alice_key not in text
    assert hash_api_key(creds.alice_key) in text
    entries = parse_keys(text)
    assert entries[hash_api_key(creds.admin_key)].admin
    assert not entries[hash_api_key(creds.alice_key)].admin


@pytest.mark.parametrize(
    "line", ["alice", "alice: nothex", "bad name: " + "0" * 64, "alice: " + "0" * 64 + " root"]
)
def test_bad_keys_file_lines_are_refused(line: str) -> None:
    with pytest.raises(FrontDoorConfigError, match="line 1"):
        parse_keys(line)


def test_keys_file_is_read_again_when_it_changes(creds: Credentials) -> None:
    path = creds.folder / "rotating"
    path.write_text(key_line("alice", creds.alice_key) + "\n")
    table = ApiKeyTable(str(path))
    assert table.lookup(creds.alice_key) is not None
    # Rotation: the old key goes, a new one comes; no restart.
    path.write_text(key_line("alice", creds.bob_key) + "\n")
    os.utime(path, (time.time() + 5, time.time() + 5))
    table._checked = 0.0  # the once-a-second check, without waiting a second
    assert table.lookup(creds.alice_key) is None
    entry = table.lookup(creds.bob_key)
    assert entry is not None and entry.principal == "alice"


def _touch_and_recheck(path: Path, table: ApiKeyTable, seconds: float) -> None:
    os.utime(path, (time.time() + seconds, time.time() + seconds))
    table._checked = 0.0  # the once-a-second check, without waiting a second


def test_a_removed_key_stops_working_even_when_the_edit_broke_another_line(
    creds: Credentials, caplog: pytest.LogCaptureFixture
) -> None:
    path = creds.folder / "revoking"
    path.write_text(
        key_line("alice", creds.alice_key) + "\n" + key_line("bob", creds.bob_key) + "\n"
    )
    table = ApiKeyTable(str(path))
    assert table.lookup(creds.bob_key) is not None
    # bob's line goes; the same edit leaves a broken line behind.
    path.write_text(key_line("alice", creds.alice_key) + "\nnot a key line\n")
    _touch_and_recheck(path, table, 5)
    assert table.lookup(creds.bob_key) is None
    assert table.lookup(creds.alice_key) is not None
    assert any("line" in r.getMessage() and r.levelname == "ERROR" for r in caplog.records)


def test_a_deleted_keys_file_leaves_no_key_valid(creds: Credentials) -> None:
    path = creds.folder / "deleted"
    path.write_text(key_line("alice", creds.alice_key) + "\n")
    table = ApiKeyTable(str(path))
    path.unlink()
    table._checked = 0.0
    assert table.lookup(creds.alice_key) is None
    # Written again: valid again.
    path.write_text(key_line("alice", creds.alice_key) + "\n")
    _touch_and_recheck(path, table, 10)
    assert table.lookup(creds.alice_key) is not None


# -- client tokens ----------------------------------------------------------


def test_client_token_round_trip_and_limits() -> None:
    signer = ClientTokenSigner(b"s" * 32)
    token, claims = signer.mint("alice", ttl_s=60, max_sessions=3, can_start=False)
    got = signer.verify(token)
    assert got == claims
    principal = got.principal_of()
    assert (principal.id, principal.method, principal.can_start) == (
        "alice",
        AuthMethod.CLIENT_TOKEN,
        False,
    )
    assert principal.max_sessions == 3 and not principal.admin and not principal.can_mint


def test_client_token_tampering_and_expiry_are_refused() -> None:
    signer = ClientTokenSigner(b"s" * 32)
    token, _ = signer.mint("alice", ttl_s=60)
    head, _, signature = token.rpartition(".")
    body = json.loads(base64.urlsafe_b64decode(head[4:] + "=="))
    body["sub"] = "admin"
    forged = "wct_" + base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
    with pytest.raises(CredentialRejected, match="signature"):
        signer.verify(f"{forged}.{signature}")
    with pytest.raises(CredentialRejected, match="signature"):
        ClientTokenSigner(b"t" * 32).verify(token)
    with pytest.raises(CredentialRejected, match="expired"):
        signer.verify(token, now=time.time() + 61)


def test_client_token_secret_must_be_long() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        ClientTokenSigner(b"short")


# -- JWTs -------------------------------------------------------------------


def test_hs256_jwt(creds: Credentials) -> None:
    verifier = JwtVerifier(secret=creds.jwt_secret, audience="wsserver")
    principal = verifier.verify(creds.hs256("carol"))
    assert (principal.id, principal.method) == ("carol", AuthMethod.JWT)


def test_jwks_rs256_and_es256(creds: Credentials) -> None:
    verifier = JwtVerifier.from_jwks_file(creds.jwks_file, audience="wsserver")
    assert verifier.verify(creds.rs256("dave")).id == "dave"
    assert verifier.verify(creds.es256("erin")).id == "erin"


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"ttl": -120}, "expired"),
        ({"aud": "someone-else"}, "audience"),
        ({"sub": ""}, "sub"),
    ],
)
def test_jwt_claims_are_checked(creds: Credentials, claims: dict[str, object], why: str) -> None:
    verifier = JwtVerifier(secret=creds.jwt_secret, audience="wsserver")
    sub = str(claims.pop("sub", "carol"))
    ttl = float(claims.pop("ttl", 300))  # type: ignore[arg-type]
    with pytest.raises(CredentialRejected, match=why):
        verifier.verify(creds.hs256(sub, ttl=ttl, **claims))


def test_jwt_without_exp_is_refused(creds: Credentials) -> None:
    verifier = JwtVerifier(secret=creds.jwt_secret, audience="wsserver")
    token = jwt.encode({"sub": "carol", "aud": "wsserver"}, creds.jwt_secret, algorithm="HS256")
    with pytest.raises(CredentialRejected, match="exp"):
        verifier.verify(token)


def test_jwt_algorithm_none_and_confusion_are_refused(creds: Credentials) -> None:
    claims = {"sub": "carol", "aud": "wsserver", "exp": int(time.time() + 60)}
    unsigned = jwt.encode(claims, None, algorithm="none")
    for verifier in (
        JwtVerifier(secret=creds.jwt_secret, audience="wsserver"),
        JwtVerifier.from_jwks_file(creds.jwks_file, audience="wsserver"),
    ):
        with pytest.raises(CredentialRejected):
            verifier.verify(unsigned)
    # An HMAC "signed" with a secret the attacker chose, against a public-key verifier.
    hmac_token = jwt.encode(claims, b"x" * 32, algorithm="HS256", headers={"kid": "rsa-1"})
    with pytest.raises(CredentialRejected):
        JwtVerifier.from_jwks_file(creds.jwks_file, audience="wsserver").verify(hmac_token)
    with pytest.raises(FrontDoorConfigError, match="never"):
        authenticator(creds, jwt_algorithms="HS256,none")
    with pytest.raises(FrontDoorConfigError, match="cannot be used"):
        JwtVerifier(secret=creds.jwt_secret, audience="wsserver", algorithms=frozenset({"RS256"}))


# -- the authenticator --------------------------------------------------------


def test_each_credential_kind_is_recognised(creds: Credentials) -> None:
    auth = authenticator(creds)
    assert auth.tokens is not None
    token, _ = auth.tokens.mint("frank", ttl_s=60)
    found = {
        "alice": bearer(auth, creds.alice_key),
        "ops": bearer(auth, creds.admin_key),
        "carol": bearer(auth, creds.hs256("carol")),
        "frank": bearer(auth, token),
    }
    for name, principal in found.items():
        assert isinstance(principal, Principal) and principal.id == name
    assert isinstance(found["ops"], Principal) and found["ops"].admin
    via_subprotocol = auth.authenticate(
        authorization=None, subprotocols=f"wsserver.v1.json, wsserver.token.{token}", query=""
    )
    assert isinstance(via_subprotocol, Principal) and via_subprotocol.id == "frank"


def test_refusals(creds: Credentials) -> None:
    auth = authenticator(creds)
    cases = {
        "no credentials": auth.authenticate(authorization=None, subprotocols=None, query=""),
        "unknown API key": bearer(auth, "wsk_not-a-key"),
        "Bearer": auth.authenticate(authorization="Basic abc", subprotocols=None, query=""),
        "more than one": auth.authenticate(
            authorization=f"Bearer {creds.alice_key}",
            subprotocols=f"wsserver.token.{creds.bob_key}",
            query="",
        ),
        "URL query": auth.authenticate(
            authorization=f"Bearer {creds.alice_key}",
            subprotocols=None,
            query=f"api_key={creds.alice_key}",
        ),
    }
    for why, refusal in cases.items():
        assert isinstance(refusal, AuthRefusal), why
        assert refusal.status == HTTPStatus.UNAUTHORIZED
        assert why in refusal.message
        assert creds.alice_key not in refusal.message
    assert cases["no credentials"].www_authenticate == 'Bearer realm="wsserver"'
    assert 'error="invalid_token"' in cases["unknown API key"].www_authenticate


def test_token_in_query_is_refused_even_without_auth() -> None:
    auth = Authenticator(required=False)
    refusal = auth.authenticate(authorization=None, subprotocols=None, query="token=abc")
    assert isinstance(refusal, AuthRefusal)
    assert auth.authenticate(authorization=None, subprotocols=None, query="") is ANONYMOUS


def test_auth_defaults_by_listen_address(creds: Credentials) -> None:
    assert not FrontDoorSettings().auth_required("127.0.0.1")
    with pytest.raises(FrontDoorConfigError, match="no credentials configured"):
        FrontDoorSettings().auth_required("0.0.0.0")
    with pytest.raises(FrontDoorConfigError, match="needs"):
        FrontDoorSettings(auth="required").auth_required("127.0.0.1")
    assert FrontDoorSettings(**creds.settings()).auth_required("127.0.0.1")
    assert not FrontDoorSettings(auth="none", **creds.settings()).auth_required("0.0.0.0")


def test_auth_none_beyond_loopback_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "wsserver.frontdoor"):
        Authenticator.from_settings(FrontDoorSettings(auth="none"), "0.0.0.0")
        Authenticator.from_settings(FrontDoorSettings(auth="none"), "127.0.0.1")
    warnings = [r for r in caplog.records if "authentication is off" in r.getMessage()]
    assert len(warnings) == 1


# -- redaction ------------------------------------------------------------


def test_redaction_of_every_secret_form(creds: Credentials) -> None:
    token, _ = ClientTokenSigner(b"s" * 32).mint("alice", ttl_s=60)
    jwt_token = creds.hs256()
    text = (
        f"Authorization: Bearer {creds.alice_key}\nSec-WebSocket-Protocol: wsserver.v1.json, "
        f"wsserver.token.{token}\nkey {creds.bob_key} jwt {jwt_token} "
        '{"type":"session.resume","resume_token":"plain-old-token","last_seq":3}'
    )
    scrubbed = redact(text)
    for secret in (creds.alice_key, creds.bob_key, token, jwt_token, "plain-old-token"):
        assert secret not in scrubbed
    assert "wsserver.v1.json" in scrubbed and '"last_seq":3' in scrubbed


def test_redaction_of_secrets_glued_to_a_name(creds: Credentials) -> None:
    jwt_token = creds.hs256()
    text = f"API_KEY_{creds.alice_key} x{jwt_token} token=abc_{creds.bob_key}"
    scrubbed = redact(text)
    for secret in (creds.alice_key, creds.bob_key, jwt_token):
        assert secret not in scrubbed, scrubbed
    assert scrubbed.startswith("API_KEY_wsk_")


def test_redacting_filter_rewrites_messages_and_tracebacks(creds: Credentials) -> None:
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "key %s", (creds.alice_key,), None)
    try:
        raise RuntimeError(f"failed with {creds.bob_key}")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    RedactingFilter().filter(record)
    assert creds.alice_key not in record.getMessage()
    assert record.exc_text is not None and creds.bob_key not in record.exc_text


@pytest.mark.parametrize("name", ["anonymous", "anonymous@198.51.100.7", "acme#tok"])
def test_reserved_principal_names_are_refused_for_keys_and_jwts(
    creds: Credentials, name: str
) -> None:
    with pytest.raises(ValueError, match=r"reserved|invalid"):
        key_line(name, creds.alice_key)
    verifier = JwtVerifier(secret=creds.jwt_secret, audience="wsserver")
    with pytest.raises(CredentialRejected, match="reserved"):
        verifier.verify(creds.hs256(name))

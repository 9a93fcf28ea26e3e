"""The front door's settings, shared by the worker's and the router's settings objects."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field

from wsserver.frontdoor.addresses import LOOPBACK
from wsserver.frontdoor.errors import FrontDoorConfigError
from wsserver.frontdoor.gate import NetworksSetting, OriginsSetting
from wsserver.settings_bounds import BoundedNumbers


class FrontDoorSettings(BoundedNumbers):
    """Authentication, admin access and TLS. Mixed into ``Settings`` and ``RouterSettings``
    (with the bound on their numbers)."""

    auth: Literal["auto", "required", "none"] = Field(
        "auto",
        description="'required': every request needs credentials; 'none': no checks "
        "(a warning when listening beyond loopback); 'auto': required when any credential "
        "source is configured, none on loopback when nothing is, refused to start otherwise",
    )
    api_keys_file: str = Field(
        "", description="file of API keys, one 'PRINCIPAL: SHA256-HEX [admin]' per line"
    )
    jwt_secret_file: str = Field(
        "", description="file holding the shared secret of HS256 JWTs (32 bytes or more)"
    )
    jwt_jwks_file: str = Field("", description="JWKS file with the public keys of RS256/ES256 JWTs")
    jwt_audience: str = Field("wsserver", description="the aud claim JWTs must carry")
    jwt_issuer: str = Field("", description="the iss claim JWTs must carry (empty: not checked)")
    jwt_algorithms: str = Field(
        "",
        description="comma-separated JWT algorithms allowed (default: HS256 with a secret, "
        "RS/PS/ES/EdDSA with a JWKS; 'none' never)",
    )
    client_token_secret_file: str = Field(
        "",
        description="file holding the secret that signs client tokens (32 bytes or more; the "
        "same on every worker and router); empty: client tokens are off",
    )
    client_token_ttl: float = Field(
        300.0, gt=0, description="seconds a client token lives when the request names none"
    )
    client_token_max_ttl: float = Field(
        3600.0, gt=0, description="longest client token lifetime a backend may ask for"
    )
    admin_port: int = Field(
        0,
        ge=0,
        le=65535,
        description="port of a separate admin listener serving /stats, /metrics, /usage/ID "
        "(workers only), /healthz, /readyz without credentials (0: none; the main port needs "
        "an admin key for them)",
    )
    admin_host: str = Field("127.0.0.1", description="address of the admin listener")
    tls_cert: str = Field("", description="PEM certificate chain: serve wss:// and https://")
    tls_key: str = Field("", description="PEM private key of --tls-cert")

    # Origin allowlist, client addresses and handshake rate: docs/PROTOCOL.md, "Quotas and
    # Origin". The same on workers and routers.
    allowed_origins: OriginsSetting = Field(
        "",
        description="comma-separated browser origins (scheme://host[:port], exact) that may "
        "open websockets; empty: loopback pages only (localhost, 127.0.0.0/8, [::1]); '*': any. "
        "Handshakes without Origin (non-browser clients) are always allowed",
    )
    trusted_proxies: NetworksSetting = Field(
        LOOPBACK,
        description="comma-separated addresses or networks (the router, an ingress) whose "
        "X-Forwarded-For names the client; empty: trust none",
    )
    quota_exempt: NetworksSetting = Field(
        LOOPBACK,
        description="comma-separated networks whose anonymous clients no quota counts (the "
        "demo and benchmarks on loopback); empty: none",
    )
    handshakes_per_second_per_ip: float = Field(
        20.0, gt=0, description="steady WebSocket handshakes per second per client address"
    )
    handshake_burst_per_ip: int = Field(
        200,
        ge=0,
        description="handshakes a client address may make at once above the steady rate, e.g. "
        "reconnecting after a worker died (0 = no limit)",
    )

    def credentials_configured(self) -> bool:
        """Whether any credential source is set."""
        return bool(
            self.api_keys_file
            or self.jwt_secret_file
            or self.jwt_jwks_file
            or self.client_token_secret_file
        )

    def auth_required(self, host: str) -> bool:
        """Whether requests need credentials, listening on ``host``; raises when unsafe."""
        configured = self.credentials_configured()
        if self.auth == "none":
            return False
        if self.auth == "required" and not configured:
            raise FrontDoorConfigError(
                "--auth required needs --api-keys-file, --jwt-secret-file, --jwt-jwks-file "
                "or --client-token-secret-file"
            )
        if self.auth == "auto" and not configured and not is_loopback(host):
            raise FrontDoorConfigError(
                f"listening on {host or 'every address'} with no credentials configured: set "
                "--api-keys-file, --jwt-secret-file or --jwt-jwks-file, or --auth none to "
                "serve without authentication"
            )
        return configured

    def tls_enabled(self) -> bool:
        """Whether to serve TLS; raises when only half of the pair is set."""
        if bool(self.tls_cert) != bool(self.tls_key):
            raise FrontDoorConfigError("--tls-cert and --tls-key go together")
        return bool(self.tls_cert)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

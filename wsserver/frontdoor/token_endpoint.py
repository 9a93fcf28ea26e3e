"""``POST /v1/client_tokens``: a backend asks for a client token for one of its users.

The parameters come in the query string (``principal``, ``ttl_s``,
``max_sessions``, ``can_start``): nothing in it is secret, and the worker's HTTP
side is its WebSocket handshake parser, which takes no request body. The caller
authenticates with an API key or a JWT; an admin key may name any principal,
any other caller only itself. The answer carries the token once; it is never
logged or stored.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from wsserver.frontdoor.api_keys import check_principal_name
from wsserver.frontdoor.authenticator import Authenticator
from wsserver.frontdoor.config import FrontDoorSettings
from wsserver.frontdoor.principal import Principal

PATH = "/v1/client_tokens"
MAX_SESSIONS_CAP = 1000


def mint_client_token(
    authenticator: Authenticator,
    settings: FrontDoorSettings,
    caller: Principal,
    method: str,
    query: str,
) -> tuple[HTTPStatus, dict[str, Any]]:
    """The status and JSON body of a token request by ``caller``."""
    if method != "POST":
        return HTTPStatus.METHOD_NOT_ALLOWED, {"error": "use POST"}
    if authenticator.tokens is None:
        return HTTPStatus.NOT_FOUND, {"error": "client tokens are not enabled on this server"}
    if not caller.can_mint:
        return HTTPStatus.FORBIDDEN, {
            "error": "forbidden",
            "message": "a client token cannot mint client tokens",
        }
    params = {k: v[-1] for k, v in parse_qs(query).items()}
    unknown = set(params) - {"principal", "ttl_s", "max_sessions", "can_start"}
    if unknown:
        return HTTPStatus.BAD_REQUEST, {"error": f"unknown parameter {sorted(unknown)[0]}"}
    try:
        principal = check_principal_name(params.get("principal", caller.id))
        ttl = float(params.get("ttl_s", settings.client_token_ttl))
        max_sessions = int(params.get("max_sessions", "1"))
        can_start = _flag(params.get("can_start", "true"))
    except ValueError as exc:
        return HTTPStatus.BAD_REQUEST, {"error": str(exc)}
    if not 0 < ttl <= settings.client_token_max_ttl:
        return HTTPStatus.BAD_REQUEST, {
            "error": f"ttl_s must be in (0, {settings.client_token_max_ttl:g}]"
        }
    if not 0 <= max_sessions <= MAX_SESSIONS_CAP:
        return HTTPStatus.BAD_REQUEST, {"error": f"max_sessions must be in [0, {MAX_SESSIONS_CAP}]"}
    if principal != caller.id and not caller.admin:
        return HTTPStatus.FORBIDDEN, {
            "error": "forbidden",
            "message": "only an admin key mints tokens for another principal",
        }
    token, claims = authenticator.tokens.mint(
        principal, ttl_s=ttl, max_sessions=max_sessions, can_start=can_start
    )
    return HTTPStatus.CREATED, {
        "token": token,
        "principal": claims.principal,
        "expires_at": claims.expires_at,
        "max_sessions": claims.max_sessions,
        "can_start": claims.can_start,
    }


def _flag(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes"):
        return True
    if raw.lower() in ("0", "false", "no"):
        return False
    raise ValueError(f"can_start must be true or false, not {raw!r}")

"""The API key of an OpenAI-compatible server, as the header it is sent in."""

from __future__ import annotations


def bearer_header(api_key: str | None) -> dict[str, str]:
    """``{"Authorization": "Bearer <key>"}``, or no header without a key.

    The header holds the key: never log it.
    """
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}

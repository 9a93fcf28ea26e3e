"""TLS contexts: the worker's and router's listeners, and the router's connections to workers."""

from __future__ import annotations

import ssl

from wsserver.frontdoor.errors import FrontDoorConfigError


def server_context(cert: str, key: str) -> ssl.SSLContext:
    """A server context for ``cert`` (PEM chain) and ``key``; TLS 1.2 or newer."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise FrontDoorConfigError(f"cannot load the TLS certificate {cert}: {exc}") from exc
    return context


def client_context(ca_file: str = "") -> ssl.SSLContext:
    """A verifying client context: the system's CAs, or those in ``ca_file``."""
    try:
        return ssl.create_default_context(cafile=ca_file or None)
    except (OSError, ssl.SSLError) as exc:
        raise FrontDoorConfigError(f"cannot load the CA file {ca_file}: {exc}") from exc

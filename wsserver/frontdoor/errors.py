"""Errors of the front door."""

from __future__ import annotations


class FrontDoorError(Exception):
    """Base class of front-door errors."""


class FrontDoorConfigError(FrontDoorError):
    """The authentication or TLS settings cannot work (raised at startup)."""


class CredentialRejected(FrontDoorError):
    """A presented credential is not valid; the message says why, never the credential."""

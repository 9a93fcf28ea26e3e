"""The SDK's exceptions: one tree, rooted at :class:`ClientError`."""

from __future__ import annotations


class ClientError(Exception):
    """Base class of SDK errors."""


class SessionClosed(ClientError):
    """The session ended for good (terminal close code, failed resume, or close())."""


class AuthenticationError(SessionClosed):
    """The server refused the credentials (HTTP 401/403 or an auth close code); never retried.

    A :class:`SessionClosed` too: the session cannot go on with these credentials.
    """

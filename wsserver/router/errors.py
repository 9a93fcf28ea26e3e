"""The router's exceptions: one tree, rooted at :class:`RouterError`."""

from __future__ import annotations


class RouterError(Exception):
    """Base of the router's errors."""


class MalformedHead(RouterError, ValueError):
    """An HTTP head that is not HTTP/1.1 as the router accepts it (answered 400)."""

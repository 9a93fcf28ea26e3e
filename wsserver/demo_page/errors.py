"""The demo page's exceptions."""

from __future__ import annotations

from wsserver.frontdoor.errors import FrontDoorConfigError


class DemoPageError(Exception):
    """Base of the demo page's errors."""


class DemoPageConfigError(DemoPageError, FrontDoorConfigError):
    """The demo page's settings cannot work (raised at startup). A front-door config
    error too: the page's tokens are authentication, and startup reports those."""

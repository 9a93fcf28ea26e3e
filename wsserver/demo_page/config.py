"""The demo page's settings, mixed into the worker's ``Settings``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class DemoPageSettings(BaseModel):
    """Whether the worker serves the browser demo page, and who its visitors are."""

    demo_page: Literal["auto", "on", "off"] = Field(
        "auto",
        description="serve the browser demo page at /demo/ ('/' redirects there): 'auto' "
        "when authentication is off, 'on' also with authentication (its visitors then get "
        "client tokens for --demo-principal), 'off' never",
    )
    demo_principal: str = Field(
        "",
        description="with authentication on and --demo-page on: the principal whose "
        "short-lived client tokens POST /demo/token hands to any page of an allowed origin "
        "(anyone who can load the page opens sessions as it, within its quotas); empty: the "
        "page gets no token",
    )

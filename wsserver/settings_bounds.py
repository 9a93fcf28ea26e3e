"""A bound on every number of seconds, rate or factor a settings object takes.

``inf`` and ``nan`` are refused by the models themselves (``allow_inf_nan=False``); a
finite float can still be far past anything meant (``--lease-ttl 1e308``), and then
fails deep inside (a TTL in milliseconds that no integer holds) long after the command
was taken. Past :data:`MAX_SETTING_NUMBER` it is refused with the other invalid settings.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator

MAX_SETTING_NUMBER = 1e9
"""The largest float setting taken: 1e9 seconds is some 31 years, 1e9 a second a rate
no client reaches."""


class BoundedNumbers(BaseModel):
    """Mixed into the settings models: refuses a float setting above the bound."""

    @field_validator("*", mode="after")
    @classmethod
    def _bounded(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, float) and abs(value) > MAX_SETTING_NUMBER:
            raise ValueError(f"{info.field_name} must be at most {MAX_SETTING_NUMBER:g}")
        return value

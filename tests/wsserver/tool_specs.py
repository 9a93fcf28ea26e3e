"""Tool definitions the worker tests declare in ``session.start`` (native shape)."""

from __future__ import annotations

from typing import Any

WEATHER_TOOL: dict[str, Any] = {
    "name": "get_weather",
    "description": "current weather of a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
"""A client tool the simulated engine calls when asked about the weather."""

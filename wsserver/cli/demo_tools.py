"""A small tool set for ``wsserver chat --tools`` and the demo (made-up data)."""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

from wsserver.client.tools import ToolHandler


def get_weather(city: str) -> dict[str, Any]:
    """Current weather in a city (invented, but the same for the same city)."""
    seed = int.from_bytes(hashlib.sha256(city.lower().encode()).digest()[:4], "little")
    sky = ("sunny", "cloudy", "rainy", "windy")[seed % 4]
    return {"city": city, "temperature_c": 5 + seed % 25, "sky": sky}


get_weather.parameters = {  # type: ignore[attr-defined]
    "type": "object",
    "properties": {"city": {"type": "string", "description": "city name"}},
    "required": ["city"],
    "additionalProperties": False,
}


def get_time(timezone_offset_hours: int = 0) -> dict[str, Any]:
    """The time now at a UTC offset."""
    zone = datetime.timezone(datetime.timedelta(hours=timezone_offset_hours))
    return {"time": datetime.datetime.now(zone).isoformat(timespec="seconds")}


get_time.parameters = {  # type: ignore[attr-defined]
    "type": "object",
    "properties": {"timezone_offset_hours": {"type": "integer", "minimum": -12, "maximum": 14}},
    "additionalProperties": False,
}

DEMO_TOOLS: dict[str, ToolHandler] = {"get_weather": get_weather, "get_time": get_time}

"""Checks shared by the tool-loop and structured-output tests."""

from __future__ import annotations

import json
from typing import Any


def of_type(messages: list[dict[str, Any]], msg_type: str) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("type") == msg_type]


def consistent(partial: Any, final: Any) -> bool:
    """Whether a provisional value can grow into ``final`` (nothing shown disappears)."""
    if partial is None:
        return True  # nothing parsed yet (or a literal null, which then equals final)
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            k in final and consistent(v, final[k]) for k, v in partial.items()
        )
    if isinstance(partial, list):
        return (
            isinstance(final, list)
            and len(partial) <= len(final)
            and all(consistent(p, f) for p, f in zip(partial, final, strict=False))
        )
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    if isinstance(partial, bool) or isinstance(final, bool):
        return partial is final
    if isinstance(partial, int | float):
        # A number cut in the middle reads as its longest valid prefix (12 of 123).
        return isinstance(final, int | float) and json.dumps(final).startswith(json.dumps(partial))
    return bool(partial == final)

"""Test combinations that do not exist are not collected (rather than skipped)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop the memory transport's runs on the fast send path: the memory transport has no
    send path, so its one run (on the default engine) covers it."""
    kept, dropped = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        combo = params.params if params is not None else {}
        if combo.get("open_session") == "memory" and combo.get("ws_engine") == "fast":
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept

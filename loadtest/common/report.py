"""Percentiles, figures beside their baselines, the printed table and the JSON report."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation; ``None`` when empty."""
    if not sorted_values:
        return None
    rank = (len(sorted_values) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = rank - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """Count, p50, p99 and max of a latency sample, in its own unit."""
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "p50": _round(percentile(ordered, 50)),
        "p99": _round(percentile(ordered, 99)),
        "max": _round(ordered[-1]) if ordered else None,
    }


def merge_counts(counters: Iterable[Mapping[Any, int]]) -> dict[str, int]:
    """Counters from every client process added up, key by key (keys as JSON has them)."""
    merged: dict[str, int] = {}
    for counter in counters:
        for key, value in counter.items():
            merged[str(key)] = merged.get(str(key), 0) + value
    return merged


def ratio(value: float | None, baseline: float | None) -> float | None:
    """``value / baseline``, or ``None`` when either is missing or the baseline is 0."""
    if value is None or baseline is None or baseline == 0:
        return None
    return round(value / baseline, 3)


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


COUNT_UNITS = frozenset({"events", "sessions", "responses", "chars"})
"""Units printed as whole numbers."""


@dataclass(frozen=True, slots=True)
class Figure:
    """One measured figure beside its baseline from the same run."""

    name: str
    unit: str
    value: float | None
    baseline_name: str
    baseline: float | None

    @property
    def ratio(self) -> float | None:
        """``value / baseline``."""
        return ratio(self.value, self.baseline)

    def to_dict(self) -> dict[str, Any]:
        """JSON form, ratio included."""
        return {**asdict(self), "ratio": self.ratio}


def compared(
    name: str,
    unit: str,
    baseline_name: str,
    measured: Mapping[str, Any],
    baseline: Mapping[str, Any],
    *keys: str,
) -> Figure:
    """A figure read at the same ``keys`` of the measured result and of its baseline's."""
    value: Any = measured
    base: Any = baseline
    for key in keys:
        value, base = value[key], base[key]
    return Figure(name, unit, value, baseline_name, base)


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit in ("tokens/s", "frames/s") or unit in COUNT_UNITS:
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def format_table(figures: Sequence[Figure], value_header: str = "worker") -> str:
    """A fixed-width table: figure, measured value, baseline, baseline value, ratio."""
    header = ("figure", value_header, "baseline (same run)", "baseline", "ratio")
    rows = [header] + [
        (
            f"{f.name} ({f.unit})",
            _cell(f.value, f.unit),
            f.baseline_name,
            _cell(f.baseline, f.unit),
            "n/a" if f.ratio is None else f"{f.ratio:.2f}x",
        )
        for f in figures
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            row[i].ljust(widths[i]) if i in (0, 2) else row[i].rjust(widths[i])
            for i in range(len(row))
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(path: Path, report: dict[str, Any]) -> None:
    """Write the report, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n")

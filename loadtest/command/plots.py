"""The PNG plots written beside a report: latency CDFs and the run over time.

Figures are made without pyplot (no global state, the Agg canvas: files only), so
several runs can write their plots from threads at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from loadtest.command.figures import LATENCY_FIGURES

DPI = 80

SERIES = (("target", "-"), ("baseline", "--"))


def _cdf(ax: Any, values: list[float], label: str, style: str) -> None:
    ordered = sorted(values)
    n = len(ordered)
    ax.plot(ordered, [(i + 1) / n for i in range(n)], style, label=f"{label} (n={n})")


def latency_plot(report: dict[str, Any], path: Path) -> Path | None:
    """One CDF panel per latency the run measured, target and baseline; ``None`` if none."""
    results = report["results"]
    keys = [(n, k) for n, k in LATENCY_FIGURES if results["target"]["samples_ms"].get(k)]
    if not keys:
        return None
    fig = Figure(figsize=(4.2 * len(keys), 3.4))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(keys), squeeze=False)
    for ax, (name, key) in zip(axes[0], keys, strict=True):
        for series, style in SERIES:
            values = (results.get(series) or {}).get("samples_ms", {}).get(key)
            if values:
                _cdf(ax, values, series, style)
        ax.set_title(f"{name} CDF")
        ax.set_xlabel("ms")
        ax.set_ylabel("share of samples")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"{report['scenario']}: latency")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    return path


def timeline_plot(report: dict[str, Any], path: Path) -> Path:
    """Tokens/s, events/s and sessions active over time (and the worker's RSS when local)."""
    fig = Figure(figsize=(13, 3.4))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3)
    panels = (
        ("tokens_per_s", "delivered tokens/s"),
        ("events_per_s", "events/s"),
        ("sessions", "concurrent sessions"),
    )
    for ax, (key, title) in zip(axes, panels, strict=True):
        for series, style in SERIES:
            timeline = (report["results"].get(series) or {}).get("timeline", [])
            if timeline:
                ax.plot([p["t"] for p in timeline], [p[key] for p in timeline], style, label=series)
        ax.set_title(title)
        ax.set_xlabel("s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    rss = [p for p in report["results"]["target"]["timeline"] if "rss_mib" in p]
    if rss:
        twin = axes[2].twinx()
        twin.plot([p["t"] for p in rss], [p["rss_mib"] for p in rss], ":", color="gray")
        twin.set_ylabel("worker RSS (MiB, dotted)")
    fig.suptitle(f"{report['scenario']}: over time")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    return path


def write_plots(report: dict[str, Any], report_path: Path) -> list[Path]:
    """Both plots, named after the report (``NAME-latency.png``, ``NAME-timeline.png``)."""
    report_path.parent.mkdir(parents=True, exist_ok=True)
    stem = report_path.with_suffix("")
    written = [timeline_plot(report, Path(f"{stem}-timeline.png"))]
    latency = latency_plot(report, Path(f"{stem}-latency.png"))
    if latency is not None:
        written.insert(0, latency)
    return written

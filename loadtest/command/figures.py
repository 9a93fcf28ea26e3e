"""The figures of a run: each measured value beside the same run's baseline, and the report."""

from __future__ import annotations

import dataclasses
from typing import Any

from loadtest.command.options import Settings, public_url
from loadtest.command.runner import Outcome
from loadtest.common.report import Figure

SCHEMA = "wsserver.loadtest.report/1"

LATENCY_FIGURES = (
    ("TTFT", "ttft_ms"),
    ("inter-token", "inter_token_ms"),
    ("interrupt->done", "interrupt_done_ms"),
    ("interrupt->last audio", "interrupt_last_audio_ms"),
    ("speech end->first audio", "speech_end_first_audio_ms"),
    ("cut->session.ready", "reconnect_ready_ms"),
)
"""(name, sample key): printed as p50 and p99 when the run measured them."""

CORRECTNESS = ("lost_events", "doubled_events")
"""Counts that must be 0 where sessions resume (handoff, reconnect-storm, mixed)."""


def _latency(outcome: Outcome | None, key: str, stat: str) -> float | None:
    if outcome is None:
        return None
    entry = outcome.rec.summary()["latency_ms"].get(key)
    return None if entry is None else entry[stat]


def _rss_growth(outcome: Outcome) -> float | None:
    """Last minus first RSS of the timeline (a local server only)."""
    rss = [p["rss_mib"] for p in outcome.rec.timeline if "rss_mib" in p]
    return rss[-1] - rss[0] if len(rss) >= 2 else None


def build_figures(
    scenario: str, settings: Settings, target: Outcome, base: Outcome | None
) -> list[Figure]:
    """Throughput, each latency measured (p50, p99), and the correctness counts."""
    base_name = "bare server" if base is not None else "none (--no-baseline)"
    figures = [
        Figure(
            "delivered tokens/s",
            "tokens/s",
            target.rec.tokens / settings.duration,
            base_name,
            None if base is None else base.rec.tokens / settings.duration,
        ),
        Figure(
            "events/s",
            "events/s",
            target.rec.events / settings.duration,
            base_name,
            None if base is None else base.rec.events / settings.duration,
        ),
    ]
    for name, key in LATENCY_FIGURES:
        if key not in target.rec.samples:
            continue
        for stat in ("p50", "p99"):
            figures.append(
                Figure(
                    f"{name} {stat}",
                    "ms",
                    _latency(target, key, stat),
                    base_name,
                    _latency(base, key, stat),
                )
            )
    if any(role in target.roles for role in ("stopped", "slowed")):
        figures.append(
            Figure(
                "bad readers closed 4000 (slow consumer)",
                "sessions",
                target.rec.close_codes["4000"],
                base_name,
                None if base is None else base.rec.close_codes["4000"],
            )
        )
    growth = _rss_growth(target)
    if growth is not None:
        base_growth = None if base is None else _rss_growth(base)
        figures.append(Figure("server RSS growth", "MiB", growth, base_name, base_growth))
    if target.rec.counters["connections_cut"]:
        for key in CORRECTNESS:
            figures.append(
                Figure(key.replace("_", " "), "events", target.rec.counters[key], "target", 0)
            )
    return figures


def resumes_broken(target: Outcome) -> list[str]:
    """Why the run failed its goals, if it did (never a speed): no session at all, or a
    resume that lost or doubled an event or did not happen."""
    counters = target.rec.counters
    out = [f"{key}: {counters[key]}" for key in CORRECTNESS if counters[key]]
    if not counters["sessions_opened"]:
        out.append("no session opened on the target")
    if counters["connections_cut"] and counters["restarted"]:
        out.append(f"sessions not resumed: {counters['restarted']}")
    return out


def warnings_of(target: Outcome, base: Outcome | None, *, remote: bool) -> list[str]:
    """What the reader of the figures should know."""
    out: list[str] = []
    if target.cut:
        out.append("the duration bound cut the run: the figures are of what it had")
    if base is not None and base.cut:
        out.append("the duration bound cut the baseline run")
    if remote and base is not None:
        out.append("the target is remote (--url); the baseline ran on this machine")
    for name, outcome in (("target", target), ("baseline", base)):
        if outcome is None:
            continue
        errors = dict(outcome.rec.errors)
        if errors:
            out.append(f"{name} errors: {errors}")
    out += resumes_broken(target)
    return out


def report_of(
    scenario: str,
    settings: Settings,
    target: Outcome,
    base: Outcome | None,
    *,
    target_url: str,
    environment: dict[str, Any],
) -> dict[str, Any]:
    """The JSON report (the samples kept for the plots, bounded per figure)."""
    config = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    config["report"] = str(settings.report)
    config["api_key"] = "***" if settings.api_key else ""
    config["url"] = public_url(settings.url)
    figures = build_figures(scenario, settings, target, base)
    return {
        "schema": SCHEMA,
        "scenario": scenario,
        "config": config,
        "target": {"url": target_url, "local": not settings.url},
        "baseline": None
        if base is None
        else {"server": "bare", "local": True, "note": "started by this command on this machine"},
        "cut": target.cut or (base is not None and base.cut),
        "figures": [f.to_dict() for f in figures],
        "results": {
            "target": _result(target),
            "baseline": None if base is None else _result(base),
        },
        "warnings": warnings_of(target, base, remote=bool(settings.url)),
        "environment": environment,
        "plots": [],
    }


def _result(outcome: Outcome) -> dict[str, Any]:
    return {
        "seconds": round(outcome.seconds, 3),
        "cut": outcome.cut,
        "roles": outcome.roles,
        **outcome.rec.summary(),
    }

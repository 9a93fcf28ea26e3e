"""The engines benchmark's figures, each beside its same-run baseline, and the summary."""

from __future__ import annotations

from typing import Any

from loadtest.common.report import Figure, format_table, summarize

DIRECT = "engine called directly"

SAMPLES = ("ttft_s", "idle_s", "done_s", "first_audio_s", "transcript_s", "first_text_s")
"""The latency samples of the results (seconds), summarized in milliseconds."""


def _ms(values: list[float]) -> dict[str, Any]:
    return summarize([v * 1000 for v in values])


def summaries(results: dict[str, Any]) -> dict[str, Any]:
    """p50/p99 (ms) of every sample in the results, by phase and path."""
    out: dict[str, Any] = {}
    for phase in ("text", "interrupt", "voice"):
        paths = results.get(phase) or {}
        for path, result in paths.items():
            for key in (
                "ttft_s",
                "idle_s",
                "done_s",
                "first_audio_s",
                "transcript_s",
                "first_text_s",
            ):
                if key in result:
                    name = key.removesuffix("_s") + "_ms"
                    out.setdefault(phase, {}).setdefault(path, {})[name] = _ms(result[key])
    return out


def build_figures(results: dict[str, Any]) -> list[Figure]:
    """TTFT, tokens/s, added latency, interrupt -> idle, time to first audio."""
    sums = summaries(results)
    figures: list[Figure] = []
    text = results.get("text")
    if text:
        worker, direct = sums["text"]["worker"]["ttft_ms"], sums["text"]["direct"]["ttft_ms"]
        for q in ("p50", "p99"):
            figures.append(Figure(f"TTFT {q}", "ms", worker[q], DIRECT, direct[q]))
        figures.append(
            Figure(
                "tokens/s, all sessions",
                "tokens/s",
                round(text["worker"]["tokens_per_s"], 1),
                DIRECT,
                round(text["direct"]["tokens_per_s"], 1),
            )
        )
        added = None
        if worker["p50"] is not None and direct["p50"] is not None:
            added = round(worker["p50"] - direct["p50"], 3)
        figures.append(
            Figure("worker's added TTFT p50", "ms", added, "direct TTFT p50", direct["p50"])
        )
    if results.get("interrupt"):
        worker, direct = (
            sums["interrupt"]["worker"]["idle_ms"],
            sums["interrupt"]["direct"]["idle_ms"],
        )
        for q in ("p50", "p99"):
            figures.append(
                Figure(
                    f"interrupt -> upstream idle {q}", "ms", worker[q], "abort, direct", direct[q]
                )
            )
    if results.get("voice"):
        voice = sums["voice"]["worker"]
        ttft = voice["ttft_ms"]
        for q in ("p50", "p99"):
            figures.append(
                Figure(
                    f"voice: end of speech -> first audio {q}",
                    "ms",
                    voice["first_audio_ms"][q],
                    "TTFT of the same LLM (text)",
                    ttft[q],
                )
            )
        stt = voice["transcript_ms"]["p50"]
        first = voice["first_audio_ms"]["p50"]
        after = None if stt is None or first is None else round(first - stt, 3)
        figures.append(
            Figure(
                "voice: transcript -> first audio p50", "ms", after, "TTFT p50 (text)", ttft["p50"]
            )
        )
        lengths = sorted(results["voice"]["worker"].get("question_ms", {}).values())
        figures.append(
            Figure(
                "voice: end of speech -> transcript p50",
                "ms",
                stt,
                "spoken question p50",
                float(lengths[len(lengths) // 2]) if lengths else None,
            )
        )
    return figures


def warnings_for(results: dict[str, Any]) -> list[str]:
    """What makes a figure less than it seems: missing samples, answers not interrupted."""
    warnings = []
    for path, result in (results.get("interrupt") or {}).items():
        if result.get("not_measured"):
            warnings.append(
                f"interrupt ({path}): {result['not_measured']} answers ended before the cut "
                "or never went idle"
            )
    for path, result in (results.get("text") or {}).items():
        if len(result.get("ttft_s", [])) < len(result.get("tokens", [])):
            warnings.append(f"text ({path}): some answers had no text")
    return warnings


def print_summary(report: dict[str, Any], figures: list[Figure]) -> None:
    """The table of figures, then the warnings."""
    print()
    print(format_table(figures))
    for warning in report["warnings"]:
        print(f"warning: {warning}")

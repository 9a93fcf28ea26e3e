"""The engines benchmark's figures, each beside its same-run baseline, and the summary."""

from __future__ import annotations

from typing import Any

from loadtest.common.report import Figure, format_table, summarize
from wsserver.audio.vad import VadSettings

DIRECT = "engine called directly"

DIRECT_VOICE = "pipeline called directly"

SAMPLES = (
    "ttft_s",
    "idle_s",
    "done_s",
    "first_audio_s",
    "transcript_s",
    "first_text_s",
    "transcript_to_audio_s",
)
"""The latency samples of the results (seconds), summarized in milliseconds."""


def _ms(values: list[float]) -> dict[str, Any]:
    return summarize([v * 1000 for v in values])


def summaries(results: dict[str, Any]) -> dict[str, Any]:
    """p50/p99 (ms) of every sample in the results, by phase and path."""
    out: dict[str, Any] = {}
    for phase in ("text", "interrupt", "voice"):
        paths = results.get(phase) or {}
        for path, result in paths.items():
            for key in SAMPLES:
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
        figures.extend(_voice_figures(sums["voice"]))
    return figures


def _voice_figures(sums: dict[str, Any]) -> list[Figure]:
    """Time to first audio and its parts, through the worker beside the direct pipeline."""
    worker, direct = sums["worker"], sums["direct"]
    figures = []
    for name, key in (
        ("end of input -> first audio", "first_audio_ms"),
        ("transcript -> first audio", "transcript_to_audio_ms"),
    ):
        for q in ("p50", "p99"):
            figures.append(
                Figure(f"voice: {name} {q}", "ms", worker[key][q], DIRECT_VOICE, direct[key][q])
            )
    first, base = worker["first_audio_ms"]["p50"], direct["first_audio_ms"]["p50"]
    added = None if first is None or base is None else round(first - base, 3)
    figures.append(
        Figure(
            "voice: worker's added time to first audio p50",
            "ms",
            added,
            "direct end of input -> first audio p50",
            base,
        )
    )
    figures.append(
        Figure(
            "voice: end of input -> transcript p50",
            "ms",
            worker["transcript_ms"]["p50"],
            DIRECT_VOICE,
            direct["transcript_ms"]["p50"],
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
    for path, result in (results.get("voice") or {}).items():
        if len(result.get("first_audio_s", [])) < len(result.get("status", [])):
            warnings.append(f"voice ({path}): some answers had no audio")
    return warnings


def voice_notes(results: dict[str, Any]) -> list[str]:
    """What the voice figures include and leave out (printed under the table)."""
    voice = (results.get("voice") or {}).get("worker")
    if not voice:
        return []
    sums = summaries(results)["voice"]["worker"]
    return [
        f"voice: turn detection {voice['turn_detection']}: the last chunk commits the turn, so "
        f"the worker waited {voice['silence_window_waited_ms']} ms of VAD silence (server VAD "
        f"would add its silence_duration_ms, {VadSettings().silence_duration_ms} ms by "
        "default); both paths' input ends with the same "
        f"{voice['trailing_silence_ms']} ms pause",
        f"voice: text TTFT in the voice worker p50 {sums['ttft_ms']['p50']} ms; spoken "
        f"questions {sorted(voice['question_ms'].values())} ms",
    ]


def print_summary(report: dict[str, Any], figures: list[Figure]) -> None:
    """The table of figures, then the warnings."""
    print()
    print(format_table(figures))
    for note in voice_notes(report["results"]):
        print(note)
    for warning in report["warnings"]:
        print(f"warning: {warning}")

"""The figures of a run, each beside its same-run baseline: Realtime / native."""

from __future__ import annotations

from typing import Any

from loadtest.common.report import Figure, format_table, summarize

NATIVE = "native protocol"


def _ms(summary: dict[str, Any], key: str) -> float | None:
    """A summarized percentile (ms), or None."""
    value: float | None = summary[key]
    return value


def summaries(sample: dict[str, Any]) -> dict[str, Any]:
    """p50/p99 of a sample's latencies in milliseconds; CPU per response."""
    responses = sample.get("responses", 0)
    cpu = sample.get("cpu_s")
    return {
        "ttft": summarize([s * 1000 for s in sample["ttft_s"]]),
        "cancel": summarize([s * 1000 for s in sample["cancel_s"]]),
        "cpu_ms_per_response": (
            round(cpu * 1000 / responses, 3) if cpu is not None and responses else None
        ),
    }


def build_figures(results: dict[str, Any]) -> list[Figure]:
    """Realtime against native (text, then voice sessions) for N concurrent sessions;
    the SDK against native alone."""
    rt = summaries(results["concurrent"]["realtime"])
    nat = summaries(results["concurrent"]["native"])
    n = results["sessions"]
    figures = [
        Figure(f"TTFT {q}, {n} sessions", "ms", _ms(rt["ttft"], q), NATIVE, _ms(nat["ttft"], q))
        for q in ("p50", "p99")
    ]
    figures += [
        Figure(
            f"cancel -> done {q}, {n} sessions",
            "ms",
            _ms(rt["cancel"], q),
            NATIVE,
            _ms(nat["cancel"], q),
        )
        for q in ("p50", "p99")
    ]
    figures.append(
        Figure(
            "worker CPU per response",
            "ms",
            rt["cpu_ms_per_response"],
            NATIVE,
            nat["cpu_ms_per_response"],
        )
    )
    # Against a voice session too: the Realtime sessions open as voice sessions, and
    # their session.update to text-only turns the engine's audio off (the text
    # baseline is the same engine work now; this one shows the cost of audio).
    voice = summaries(results["concurrent"]["native_voice"])
    base = f"{NATIVE}, voice session"
    figures += [
        Figure(
            f"TTFT p50, {n} sessions", "ms", _ms(rt["ttft"], "p50"), base, _ms(voice["ttft"], "p50")
        ),
        Figure(
            f"cancel -> done p50, {n} sessions",
            "ms",
            _ms(rt["cancel"], "p50"),
            base,
            _ms(voice["cancel"], "p50"),
        ),
        Figure(
            "worker CPU per response",
            "ms",
            rt["cpu_ms_per_response"],
            base,
            voice["cpu_ms_per_response"],
        ),
    ]
    if "solo" in results:
        sdk = summaries(results["solo"]["sdk"])
        alone = summaries(results["solo"]["native"])
        base = f"{NATIVE}, one session"
        for name, key in (("TTFT", "ttft"), ("cancel -> done", "cancel")):
            for q in ("p50", "p99"):
                figures.append(
                    Figure(
                        f"openai SDK: {name} {q}, one session",
                        "ms",
                        _ms(sdk[key], q),
                        base,
                        _ms(alone[key], q),
                    )
                )
    return figures


def realtime_warnings(results: dict[str, Any]) -> list[str]:
    """What makes the figures suspect: wrong statuses, missing samples, worker warnings."""
    warnings = []
    expected = results["sessions"] * results["rounds"]
    for name, sample in results["concurrent"].items():
        statuses = sample["statuses"]
        if statuses.get("completed", 0) != expected or statuses.get("cancelled", 0) != expected:
            warnings.append(f"{name}: statuses {statuses}, expected {expected} of each")
        if len(sample["ttft_s"]) != expected or len(sample["cancel_s"]) != expected:
            warnings.append(
                f"{name}: {len(sample['ttft_s'])} TTFT and "
                f"{len(sample['cancel_s'])} cancel samples, expected {expected}"
            )
    if "solo" not in results:
        warnings.append("no openai SDK environment: no SDK sample (--sdk-python)")
    if results["worker_log"]["count"]:
        warnings.append(f"worker logged {results['worker_log']['count']} warnings")
    return warnings


def print_summary(report: dict[str, Any], figures: list[Figure]) -> None:
    """The table, then the counts behind it."""
    results = report["results"]
    print(format_table(figures, value_header="/v1/realtime"))
    for name, sample in results["concurrent"].items():
        print(
            f"{name}: {sample['responses']} responses {sample['statuses']}, "
            f"worker CPU {sample['cpu_s']:.2f} s"
        )
    for warning in report["warnings"]:
        print(f"warning: {warning}")

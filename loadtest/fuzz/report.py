"""The fuzz run's verdict: totals over categories, the goals, the printed summary."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

GOAL_RSS_RATIO = 1.10
"""RSS after the run (settled) within 10% of RSS before: the issue's goal."""

STORE_WRITER_PAUSE_S = 5.0
"""With a shared store the healthy sessions write all the time: flushes must not stop."""

_LOG_LEVEL = re.compile(r"^\S+ \S+ (ERROR|CRITICAL|WARNING) (\S+): (.*)$")


def scan_log(text: str) -> dict[str, Any]:
    """Tracebacks in a worker log, with each one's last line (the exception), and error lines."""
    lines = text.splitlines()
    exceptions: Counter[str] = Counter()
    messages: Counter[str] = Counter()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("Traceback (most recent call last):"):
            index += 1
            while index < len(lines) and (
                lines[index].startswith((" ", "\t")) or not lines[index].strip()
            ):
                index += 1
            if index < len(lines):
                exceptions[lines[index][:160]] += 1
            continue
        match = _LOG_LEVEL.match(line)
        if match:
            level, logger, message = match.groups()
            # Numbers and ids vary per occurrence; group by the message's shape.
            shape = re.sub(r"\d+", "N", message)[:120]
            messages[f"{level} {logger}: {shape}"] += 1
        index += 1
    return {
        "tracebacks": text.count("Traceback (most recent call last)"),
        "traceback_exceptions": dict(exceptions.most_common(15)),
        "log_lines_by_level": {
            level: sum(n for k, n in messages.items() if k.startswith(level))
            for level in ("CRITICAL", "ERROR", "WARNING")
        },
        "log_messages": dict(messages.most_common(15)),
    }


def totals(categories: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Counts added up over the categories."""
    summed: dict[str, Any] = {}
    for tally in categories.values():
        for key, value in tally.items():
            if key == "examples":
                continue
            if isinstance(value, dict):
                bucket = summed.setdefault(key, Counter())
                bucket.update(value)
            else:
                summed[key] = summed.get(key, 0) + value
    return {k: dict(v) if isinstance(v, Counter) else v for k, v in summed.items()}


def goals(results: dict[str, Any]) -> dict[str, bool | None]:
    """Each goal of the issue, met or not (``None``: not measured in this run)."""
    total = results["totals"]
    healthy = results["healthy"]
    rss = results["worker"]["rss_ratio"]
    log = results["worker"]["log"]
    return {
        "no crash": not results["worker"]["crashed"] and results["health"]["failures"] == 0,
        "no traceback": None if log is None else log["tracebacks"] == 0,
        "no undocumented close": total["undocumented_closes"] == 0,
        "every healthy answer complete": healthy["answers_started"] > 0
        and healthy["answers_completed"] == healthy["answers_started"]
        and healthy["sessions_opened"] == healthy["sessions"]
        and healthy["reconnects"] == 0,
        "RSS back within 10%": None if rss is None else rss <= GOAL_RSS_RATIO,
        "nothing fetched or read": results["trap"]["requests"] == 0 and total["canary_hits"] == 0,
        "every fuzz response ended once": total["responses_unterminated"] == 0
        and total["responses_done_twice"] == 0,
        "store writer keeps writing": None
        if results["store_writer"]["longest_pause_s"] is None or not results["shared_store"]
        else results["store_writer"]["longest_pause_s"] < STORE_WRITER_PAUSE_S,
        "bad input answered, connection goes on": total["silent_after"] == 0
        and total["expected_close_missing"] == 0,
    }


def _row(name: str, t: dict[str, Any]) -> str:
    closes = ",".join(f"{c}:{n}" for c, n in sorted(t["server_closes"].items()))
    internal = t["errors"].get("internal_error", 0)
    return (
        f"{name:<18} {t['inputs']:>7,} {t['connections']:>6,} {sum(t['errors'].values()):>7,}"
        f" {internal:>6,} {t['undocumented_closes']:>6,} {t['lost_without_close']:>5,}"
        f" {t['answered_after']:>6,} {t['closed_after']:>6,} {t['silent_after']:>6,}"
        f" {t['responses_unterminated']:>6,}  {closes}"
    )


def print_summary(report: dict[str, Any]) -> None:
    """The human-readable part."""
    r = report["results"]
    worker, healthy, health = r["worker"], r["healthy"], r["health"]
    print(
        f"\nfuzz: {r['totals']['inputs']:,} malformed inputs in {report['elapsed_s']} s"
        f" ({r['fuzz_seconds']} s fuzzing) over {r['totals']['connections']:,} connections,"
        f" {report['config']['lanes']} at once; {healthy['sessions']} healthy sessions\n"
    )
    header = (
        f"{'category':<18} {'inputs':>7} {'conns':>6} {'errors':>7} {'intern':>6}"
        f" {'undoc':>6} {'1006':>5} {'alive':>6} {'closed':>6} {'silent':>6} {'unend':>6}"
        "  server close codes"
    )
    print(header)
    print("-" * len(header))
    for name, tally in r["categories"].items():
        print(_row(name, tally))
    print("-" * len(header))
    print(_row("total", r["totals"]))
    log = worker["log"]
    print(
        f"\nworker: crashed {worker['crashed']} (exit {worker['returncode']}),"
        f" /healthz failures {health['failures']} of {health['checks']}"
        f" (p99 {health['healthz_ms']['p99']} ms, max {health['healthz_ms']['max']} ms)"
    )
    if log is not None:
        print(f"tracebacks logged: {log['tracebacks']}; log lines {log['log_lines_by_level']}")
        for line, n in log["traceback_exceptions"].items():
            print(f"  {n:>6} x {line}")
    print(
        f"RSS before {worker['rss_before_mib']} MiB, after {worker['rss_after_mib']} MiB"
        f" (settled {worker['settle_s']} s): ratio {worker['rss_ratio']};"
        f" /stats after: {worker['stats_after']}"
    )
    print(
        f"healthy answers: {healthy['answers_completed']:,} completed of"
        f" {healthy['answers_started']:,} started, statuses {healthy['statuses']},"
        f" seq gaps {healthy['seq_gaps']}, reconnects {healthy['reconnects']},"
        f" timeouts {healthy['timeouts']}, answer p50/p99/max {healthy['answer_ms']['p50']}/"
        f"{healthy['answer_ms']['p99']}/{healthy['answer_ms']['max']} ms"
    )
    for failure in healthy["failures"][:5]:
        print(f"  {failure}")
    writer = r["store_writer"]
    print(
        f"store writer: {writer['flushes']} flushes, longest pause {writer['longest_pause_s']} s"
        f" ({'judged: shared store' if r['shared_store'] else 'not judged: memory store'})"
    )
    print(
        f"outside-resource fetches (trap HTTP requests): {r['trap']['requests']};"
        f" canary in replies: {r['totals']['canary_hits']}"
    )
    print(
        f"fuzz responses: {r['totals']['responses_started']} started,"
        f" {r['totals']['responses_unterminated']} never ended,"
        f" {r['totals']['responses_done_twice']} ended twice"
    )
    print(f"in-band error codes: {dict(sorted(r['totals']['errors'].items()))}")
    print("\nexamples (the first inputs behind each anomaly; all in the JSON report):")
    for tally in r["categories"].values():
        for anomaly, examples in tally["examples"].items():
            print(f"  {anomaly}: {examples[0][:200]}")
    print("\ngoals:")
    for goal, met in report["goals"].items():
        print(f"  [{'ok' if met else 'n/a' if met is None else 'FAIL'}] {goal}")
    for note in report["warnings"]:
        print(f"\nnote: {note}")

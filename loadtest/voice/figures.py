"""What the voice ladder's results say: verdicts, capacity, figures, warnings, the summary."""

from __future__ import annotations

import os
from typing import Any

from loadtest.common.report import Figure, format_table
from loadtest.voice.config import VoiceConfig

PASS, FAIL, RIG = "pass", "fail", "rig-bound"
OTHERS_NOTE_PCT = 40.0
"""Kernel plus other processes above this share of a core: name it in a note."""


def _p(result: dict[str, Any], key: str, q: str) -> float | None:
    value = result[key][q]
    return None if value is None else float(value)


def verdict(config: VoiceConfig, sessions: int, worker: dict[str, Any]) -> dict[str, Any]:
    """Whether the worker sustained ``sessions`` voice sessions, and why not."""
    c = config.criterion
    reasons: list[str] = []
    if worker["sessions_opened"] < sessions:
        reasons.append(f"opened {worker['sessions_opened']} of {sessions} sessions")
    if worker["dropped_sessions"]:
        reasons.append(f"{worker['dropped_sessions']} connections dropped")
    onsets = worker["onsets"]
    if onsets["expected"] == 0:
        reasons.append("no speech was due in the window (window too short?)")
    if onsets["missed"]:
        reasons.append(
            f"{onsets['missed']} of {onsets['expected']} speech onsets got no speech_started "
            f"({onsets['sessions_missing']} sessions)"
        )
    speech, ping = _p(worker, "speech_started_ms", "p99"), _p(worker, "ping_ms", "p99")
    if speech is not None:
        bound = max(c.max_ping_multiple * ping, c.delay_floor_ms) if ping is not None else None
        if speech > c.max_delay_ms:
            reasons.append(f"speech_started p99 {speech:.1f} ms > {c.max_delay_ms:g} ms")
        if bound is not None and speech > bound:
            reasons.append(
                f"speech_started p99 {speech:.1f} ms > max({c.max_ping_multiple:g} x ping p99, "
                f"{c.delay_floor_ms:g} ms) = {bound:.1f} ms"
            )
    trend = worker["speech_started_trend"]
    first, second = trend["first_half_ms"]["p50"], trend["second_half_ms"]["p50"]
    if first is not None and second is not None:
        allowed = max(c.max_growth_ms, first)
        if second - first > allowed:
            reasons.append(
                f"speech_started p50 grew from {first:.1f} ms (first half) to {second:.1f} ms "
                f"(second half), by more than {allowed:.1f} ms: the worker fell behind"
            )
    if worker["errors"]:
        reasons.append(f"error events {worker['errors']}")
    barge = worker["barge_ins"]
    if barge["unanswered"]:
        reasons.append(f"{barge['unanswered']} of {barge['owed']} barge-ins not interrupted")
    done = _p(worker, "barge_done_ms", "p99")
    if done is not None and done > c.max_delay_ms:
        reasons.append(f"barge-in speech->done p99 {done:.1f} ms > {c.max_delay_ms:g} ms")
    if worker["unanswered_pings"]:
        reasons.append(f"{worker['unanswered_pings']} pings unanswered")
    lag = _p(worker, "send_lag_ms", "p99")
    rig = lag is not None and lag > c.max_send_lag_ms
    if rig:
        reasons.append(
            f"clients fell behind: send lag p99 {lag:.1f} ms > {c.max_send_lag_ms:g} ms "
            "(the rung measures the rig, not the server)"
        )
    status = RIG if rig else (FAIL if reasons else PASS)
    return {"status": status, "reasons": reasons}


def capacity(rungs: list[dict[str, Any]]) -> dict[str, Any]:
    """The largest N that passed, and whether every smaller rung passed too."""
    passed = [r["sessions"] for r in rungs if r["verdict"]["status"] == PASS]
    largest = max(passed) if passed else None
    below = [r for r in rungs if largest is not None and r["sessions"] < largest]
    bare_costs = [
        r["bare"]["cpu"]["server_us_per_audio_s"]
        for r in rungs
        if r.get("bare") and r["bare"]["cpu"].get("server_us_per_audio_s")
    ]
    return {
        "largest_passing": largest,
        # One core's worth of the cheapest per-session cost the bare server showed:
        # the most sessions even a server doing nothing with the audio could take here.
        "bare_receive_ceiling": int(1e6 / min(bare_costs)) if bare_costs else None,
        "largest_tried": max((r["sessions"] for r in rungs), default=None),
        "all_below_passed": all(r["verdict"]["status"] == PASS for r in below),
        "first_not_passing": next(
            (r["sessions"] for r in rungs if r["verdict"]["status"] != PASS), None
        ),
    }


def _rung_figures(rung: dict[str, Any]) -> list[Figure]:
    n, worker, bare = rung["sessions"], rung["worker"], rung.get("bare")
    figures: list[Figure] = []
    for label, key in (
        ("speech_started delay", "speech_started_ms"),
        ("barge-in speech->done", "barge_done_ms"),
        ("barge-in speech->last audio", "barge_last_audio_ms"),
    ):
        for q in ("p50", "p99"):
            figures.append(
                Figure(
                    f"N={n} {label} {q}",
                    "ms",
                    worker[key][q],
                    f"ping RTT {q}",
                    worker["ping_ms"][q],
                )
            )
    if bare is not None:
        for q in ("p50", "p99"):
            figures.append(
                Figure(
                    f"N={n} ping RTT {q}",
                    "ms",
                    worker["ping_ms"][q],
                    f"bare ping RTT {q}",
                    bare["ping_ms"][q],
                )
            )
    base = bare["cpu"] if bare is not None else {}
    figures += [
        Figure(
            f"N={n} worker CPU per session",
            "% core",
            worker["cpu"]["server_pct_of_core_per_session"],
            "bare CPU per session",
            base.get("server_pct_of_core_per_session"),
        ),
        Figure(
            f"N={n} worker CPU per audio second",
            "us",
            worker["cpu"]["server_us_per_audio_s"],
            "bare us per audio s",
            base.get("server_us_per_audio_s"),
        ),
    ]
    return figures


def build_figures(results: dict[str, Any]) -> list[Figure]:
    """Capacity first, then every rung's figures beside their same-run baselines."""
    cap = results["capacity"]
    figures = [
        Figure(
            "capacity: largest N sustained",
            "sessions",
            cap["largest_passing"],
            "largest N tried",
            cap["largest_tried"],
        ),
        Figure(
            "capacity: largest N sustained",
            "sessions",
            cap["largest_passing"],
            "bare server's one-core receive ceiling",
            cap["bare_receive_ceiling"],
        ),
    ]
    for rung in results["rungs"]:
        figures += _rung_figures(rung)
    return figures


def warnings_for(config: VoiceConfig, results: dict[str, Any]) -> list[str]:
    """Things that make a figure less trustworthy, or that looked wrong, in words."""
    notes: list[str] = []
    for rung in results["rungs"]:
        n, worker = rung["sessions"], rung["worker"]
        status = rung["verdict"]["status"]
        if status != PASS:
            notes.append(f"N={n}: {status}: " + "; ".join(rung["verdict"]["reasons"]))
        if worker["onsets"]["unexpected"]:
            notes.append(
                f"N={n}: {worker['onsets']['unexpected']} speech_started at offsets the "
                "detector replay did not predict (chunks dropped, or another --vad)"
            )
        if worker["onsets"]["decided_too_late_to_time"]:
            notes.append(f"N={n}: some speech_started came too late to time")
        log = worker["worker_log"]
        if log["count"]:
            notes.append(f"N={n}: worker logged {log['count']} warnings/errors: {log['first'][:2]}")
        if worker["cpu"]["clients_pct_of_core"] >= 90 * config.clients:
            notes.append(f"N={n}: client processes were CPU-bound")
        busy = worker["cpu"]["machine_busy_pct"]
        if busy is not None and busy >= 95:
            notes.append(
                f"N={n}: the machine was {busy:.0f}% busy (worker "
                f"{worker['cpu']['server_pct_of_core']:.0f}%, clients "
                f"{worker['cpu']['clients_pct_of_core']:.0f}%, kernel and others "
                f"{worker['cpu']['others_pct_of_core']:.0f}% of a core): the worker had less "
                "than a core to itself"
            )
        others = worker["cpu"]["others_pct_of_core"]
        if others is not None and others > OTHERS_NOTE_PCT:
            notes.append(
                f"N={n}: kernel and other processes used {others:.0f}% of a core in the window "
                "(loopback networking alone is ~10-20%): another job shared the machine"
            )
        if worker["cpu"]["server_pct_of_core"] >= 95:
            notes.append(
                f"N={n}: the worker used {worker['cpu']['server_pct_of_core']:.0f}% of its one "
                "core: it was saturated, so its CPU per session is a floor"
            )
        bare = rung.get("bare")
        if bare is None:
            continue
        if bare["dropped_sessions"] or bare["unanswered_pings"]:
            notes.append(f"N={n}: bare baseline lost connections or pings")
        if bare["cpu"]["server_pct_of_core"] >= 95:
            notes.append(
                f"N={n}: the bare baseline was saturated too; its CPU per session is a floor"
            )
    if (os.cpu_count() or 1) <= 2:
        notes.append(
            f"only {os.cpu_count()} CPU(s): the worker, {config.clients} client process(es) and "
            "the runner share them; a rung that fails may fail for want of a core the "
            "clients took, and the capacity is this machine's, not the worker's alone"
        )
    return notes


def _ms(result: dict[str, Any], key: str) -> str:
    s = result[key]
    if s["p50"] is None:
        return "n/a"
    return f"{s['p50']:.1f}/{s['p99']:.1f}"


def ladder_table(results: dict[str, Any]) -> str:
    """One line per rung: verdict, latencies (p50/p99 ms), CPU, client pace, errors."""
    header = (
        "N",
        "verdict",
        "speech_started",
        "ping RTT",
        "barge->done",
        "->last audio",
        "worker CPU",
        "us/audio-s",
        "bare us/audio-s",
        "send lag",
        "clients CPU",
        "machine busy",
        "errors",
    )
    rows = [header]
    for rung in results["rungs"]:
        w, bare = rung["worker"], rung.get("bare")
        rows.append(
            (
                str(rung["sessions"]),
                rung["verdict"]["status"],
                _ms(w, "speech_started_ms"),
                _ms(w, "ping_ms"),
                _ms(w, "barge_done_ms"),
                _ms(w, "barge_last_audio_ms"),
                f"{w['cpu']['server_pct_of_core']:.0f}%",
                f"{w['cpu']['server_us_per_audio_s']:,.0f}",
                f"{bare['cpu']['server_us_per_audio_s']:,.0f}" if bare else "n/a",
                _ms(w, "send_lag_ms"),
                f"{w['cpu']['clients_pct_of_core']:.0f}%",
                f"{w['cpu']['machine_busy_pct']:.0f}%",
                str(sum(w["errors"].values())),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(widths[i]) for i, cell in enumerate(row)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_summary(config: VoiceConfig, report: dict[str, Any], figures: list[Figure]) -> None:
    """The human-readable part."""
    c = config.criterion
    print(
        f"\nvoice benchmark: ladder {list(config.ladder)} sessions, {config.duration:g} s window "
        f"after {config.warmup:g} s warm-up, 20 ms chunks in real time, "
        f"{config.barge_in_share:.0%} barge-in sessions, {config.ping_share:.0%} pinging every "
        f"{config.ping_interval:g} s, answers at {config.decode_rate:g} tokens/s, "
        f"{config.clients} client processes, {os.cpu_count()} CPUs\n"
    )
    print(format_table(figures))
    print("\nper rung (latencies p50/p99 ms; CPU in % of one core, machine in % of all):\n")
    print(ladder_table(report["results"]))
    cap = report["results"]["capacity"]
    print(
        f"\npass: speech_started p99 <= {c.max_delay_ms:g} ms and <= max({c.max_ping_multiple:g}"
        f" x ping p99, {c.delay_floor_ms:g} ms), its p50 not growing over the window (second"
        f" half <= first half + max({c.max_growth_ms:g} ms, first half));"
        f" barge-in done p99 <= {c.max_delay_ms:g} ms; every"
        " onset heard, every barge-in interrupted, no error events (audio_too_fast among"
        f" them), no drops; client send lag p99 <= {c.max_send_lag_ms:g} ms"
    )
    largest = cap["largest_passing"]
    print(
        f"capacity: largest N sustained = {largest if largest is not None else 'none'}"
        + ("" if cap["all_below_passed"] else " (a smaller rung did not pass)")
    )
    for rung in report["results"]["rungs"]:
        w = rung["worker"]
        trend = w["speech_started_trend"]
        print(
            f"\nN={rung['sessions']}: speech_started p50 first/second half"
            f" {trend['first_half_ms']['p50']}/{trend['second_half_ms']['p50']} ms"
            f" (per 5 s: {trend['p50_per_5s_ms']}),"
            f" onsets {w['onsets']}, barge-ins {w['barge_ins']},"
            f" done {w['done_statuses']}, pings {w['ping_ms']['count']},"
            f" late ticks {w['late_ticks']}/{w['ticks']}, machine busy"
            f" {w['cpu']['machine_busy_pct']}%"
        )
    for note in report["warnings"]:
        print(f"\nnote: {note}")

"""What a store benchmark run says: figures beside same-run baselines, warnings, summary."""

from __future__ import annotations

import os
from typing import Any

from loadtest.common.report import Figure, compared, format_table
from loadtest.common.stream_load import warnings_for
from loadtest.store.config import StoreBenchConfig

ROUND_TRIPS_TARGET = 0.1
"""Redis round trips per delivered token the design allows (batched writes)."""
LOST_REASONS = ("failed/session_moved", "failed/worker_lost")


def _stream_figures(rate: float, pair: dict[str, dict[str, Any]]) -> list[Figure]:
    redis, memory = pair["redis"], pair["memory"]
    at = f"@{rate:g}/s"
    use = redis["store"]
    both_cpu = None
    if redis["server_cpu_us_per_token"] is not None and use.get("redis_cpu_us_per_token"):
        both_cpu = round(redis["server_cpu_us_per_token"] + use["redis_cpu_us_per_token"], 1)
    figures = [
        compared(
            f"delivered, {redis['sessions_opened']} sessions {at}",
            "tokens/s",
            "memory-store tokens/s",
            redis,
            memory,
            "tokens_per_s",
        ),
        compared(
            f"worker CPU per delivered token {at}",
            "us",
            "memory-store worker",
            redis,
            memory,
            "server_cpu_us_per_token",
        ),
        Figure(
            f"worker+redis-server CPU per token {at}",
            "us",
            both_cpu,
            "memory-store worker",
            memory["server_cpu_us_per_token"],
        ),
        Figure(
            f"Redis round trips per delivered token {at}",
            "trips",
            use.get("round_trips_per_token"),
            "design target (<=)",
            ROUND_TRIPS_TARGET,
        ),
    ]
    for q in ("p50", "p99"):
        for label, key in (("interrupt->done", "interrupt_ms"), ("ping RTT", "ping_ms")):
            figures.append(
                compared(f"{label} {q} {at}", "ms", f"memory-store {q}", redis, memory, key, q)
            )
    return figures


def _storm_figures(config: StoreBenchConfig, storm: dict[str, dict[str, Any]]) -> list[Figure]:
    b, a = storm["takeover"], storm["in_place"]
    figures = [
        compared(
            f"storm drop->session.ready {q}, {b['sessions_opened']} sessions",
            "ms",
            f"resume on A {q}",
            b,
            a,
            "drop_to_ready_ms",
            q,
        )
        for q in ("p50", "p99", "max")
    ]
    figures.append(
        compared(
            "storm: every session resumed after", "s", "resume on A", b, a, "all_resumed_after_s"
        )
    )
    for key, unit, name in (
        ("resumed", "sessions", "sessions resumed"),
        ("lost", "events", "lost events (seq holes)"),
        ("doubled", "events", "doubled events (seq twice)"),
        ("conflicting", "events", "seq reused for other content"),
        ("streaming_after", "sessions", "sessions streaming after resume"),
        ("ended_sessions_in_store", "sessions", "ended (1000) sessions still in Redis"),
        ("ended_sessions_resumable", "sessions", "ended (1000) sessions resumable"),
    ):
        figures.append(compared(f"storm: {name}", unit, "resume on A", b, a, key))
    figures.append(
        Figure(
            "storm: A's engine still busy after all moved to B",
            "s",
            b["a_engine_idle_after_resumed_s"],
            "A's lease renewal interval",
            round(config.lease_ttl / 3, 3),
        )
    )
    figures.append(
        Figure(
            "storm: answers ended failed (moved/lost)",
            "responses",
            _lost_answers(b),
            "resume on A",
            _lost_answers(a),
        )
    )
    return figures


def _lost_answers(storm: dict[str, Any]) -> int:
    return sum(storm["done_after"].get(reason, 0) for reason in LOST_REASONS)


def build_figures(config: StoreBenchConfig, results: dict[str, Any]) -> list[Figure]:
    """Every headline figure beside its same-run baseline."""
    figures: list[Figure] = []
    for key, pair in results.get("stream", {}).items():
        figures += _stream_figures(float(key), pair)
    if results.get("storm"):
        figures += _storm_figures(config, results["storm"])
    return figures


def store_warnings(config: StoreBenchConfig, results: dict[str, Any]) -> list[str]:
    """Things that make a figure less trustworthy, or that look broken, in words."""
    notes: list[str] = []
    for key, pair in results.get("stream", {}).items():
        bench = config.at_rate(float(key))
        for note in warnings_for(bench, {"stream": pair}):
            notes.append(note if note.startswith("only ") else f"@{key}/s {note}")
        for store, r in pair.items():
            others = r["cpu"]["others_pct_of_core"]
            if others > 25:
                notes.append(
                    f"@{key}/s {store}: other processes used {others}% of a core in its "
                    "least disturbed window: its figures are disturbed"
                )
            logged = r.get("worker_log_warnings") or {}
            if logged.get("count"):
                notes.append(
                    f"@{key}/s {store}: the worker logged {logged['count']} warnings/errors: "
                    f"{logged['first'][:2]}"
                )
        trips = pair["redis"]["store"].get("round_trips_per_token")
        if trips is not None and trips > ROUND_TRIPS_TARGET:
            notes.append(f"@{key}/s: {trips} Redis round trips per token, above the target")
    for which, storm in results.get("storm", {}).items():
        notes += _storm_notes(config, which, storm)
    return list(dict.fromkeys(notes))


def _storm_notes(config: StoreBenchConfig, which: str, storm: dict[str, Any]) -> list[str]:
    notes = []
    prefix = f"storm/{which}"
    if storm["sessions_opened"] < config.storm_sessions:
        notes.append(
            f"{prefix}: opened {storm['sessions_opened']} of {config.storm_sessions} sessions "
            f"{storm['connect_failures']}"
        )
    if storm["resumed"] < storm["sessions_opened"]:
        notes.append(
            f"{prefix}: {storm['sessions_opened'] - storm['resumed']} sessions did not resume "
            f"{storm['refusals']}"
        )
    for key in (
        "lost",
        "doubled",
        "conflicting",
        "out_of_order",
        "lost_after_resume",
        "ended_sessions_in_store",
        "ended_sessions_resumable",
    ):
        if storm[key]:
            notes.append(f"{prefix}: {key} = {storm[key]} (examples: {storm['examples'][:2]})")
    for name, logged in storm.get("worker_log_warnings", {}).items():
        if logged["count"]:
            notes.append(f"{prefix}: worker {name} logged {logged['count']}: {logged['first'][:2]}")
    overflows = storm.get("listen_overflows_drop_to_resumed", {}).get("ListenOverflows")
    if overflows:
        notes.append(
            f"{prefix}: the kernel refused {overflows} connection attempts on a full accept "
            "queue while the sessions resumed (listen backlog; the client's SYN is retried "
            "after 1 s, 3 s, 7 s ...); the machine counts every listener, ours dominate here"
        )
    retried = sum(n for attempts, n in storm["attempts"].items() if int(attempts) > 1)
    if retried:
        notes.append(f"{prefix}: {retried} sessions needed more than one connect to resume")
    if which == "takeover":
        wasted = storm["workers"]["A"]["tokens_generated_resumed_to_end"]
        if wasted:
            notes.append(
                f"{prefix}: worker A generated {wasted} tokens for nobody after every session "
                f"had resumed on B (its engine idle {storm['a_engine_idle_after_resumed_s']} s "
                "later): the old owner learns of a takeover only at its next store write or "
                "lease renewal"
            )
    return notes


def print_summary(config: StoreBenchConfig, report: dict[str, Any], figures: list[Figure]) -> None:
    """The human-readable part."""
    print(
        f"\nstore benchmark: {config.sessions} streaming sessions, {config.storm_sessions} in "
        f"the storm, {config.answer_tokens} tokens per answer, {config.clients} client "
        f"processes, {os.cpu_count()} CPUs, commit {report['environment']['git']}\n"
    )
    print(format_table(figures, value_header="measured"))
    for key, pair in report["results"].get("stream", {}).items():
        for store, r in pair.items():
            cpu, use = r["cpu"], r["store"]
            print(
                f"\n@{key}/s {store}: {r['tokens_per_s']:,.0f} tokens/s of ~"
                f"{r['offered_tokens_per_s']:,.0f} offered, frames/s {r['frames_per_s']:,.0f},"
                f" decode steps/s {r['decode_steps_per_s']}, worker CPU "
                f"{cpu['server_pct_of_core']}%, clients {cpu['clients_pct_of_core']}%, machine "
                f"{cpu['machine_busy_pct']}% (others {cpu['others_pct_of_core']}% of a core), "
                f"done {r['done_statuses']}"
            )
            if store == "redis":
                print(
                    f"  store: {use.get('round_trips')} round trips, {use.get('flushes')} "
                    f"flushes, {use.get('events_written')} events written, "
                    f"{use.get('redis_commands')} Redis commands "
                    f"({use.get('redis_commands_per_token')}/token), redis-server CPU "
                    f"{use.get('redis_cpu_pct_of_core')}%"
                )
    for key, rounds in report["results"].get("stream_rounds", {}).items():
        if len(rounds) > 2:
            print(f"\n@{key}/s rounds (figures use each store's least disturbed one):")
            for r in rounds:
                print(
                    f"  round {r['round']} {r['store']}: {r['tokens_per_s']:,.0f} tokens/s, "
                    f"{r['server_cpu_us_per_token']} us/token, others used "
                    f"{r['cpu']['others_pct_of_core']}% of a core"
                )
    for which, s in report["results"].get("storm", {}).items():
        a = s["workers"]["A"]
        print(
            f"\nstorm {which} (resume on {s['resume_on']}): resumed {s['resumed']}/"
            f"{s['sessions_opened']}, attempts {s['attempts']}, refusals {s['refusals']},"
            f" events {s['events_before']} before / {s['events_after']} after"
            f" ({s['replayed']} replayed, {s['server_ahead']} sessions behind the server),"
            f" done after resume {s['done_after']}, text rewound in {s['rewound_sessions']}"
            f" sessions ({s['rewound_chars']} chars), follow-up answers created "
            f"{s['follow_up_created']}; A generated {a['tokens_generated_drop_to_end']} tokens"
            f" after the drop ({a['tokens_generated_resumed_to_end']} after all resumed), "
            f"A sessions at end {a['at_end']['sessions']} and after its next lease renewal "
            f"{a['after_renewal']['sessions']}, B store round trips to resume "
            f"{s['workers']['B']['store_round_trips_drop_to_resumed']}, machine busy "
            f"{s['machine_busy_pct']}%, new Redis connections "
            f"{s['redis_connections_drop_to_resumed']:.0f}, accept-queue overflows "
            f"{s['listen_overflows_drop_to_resumed']}"
        )
    for note in report["warnings"]:
        print(f"\nnote: {note}")

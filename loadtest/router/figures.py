"""What a router benchmark run says: figures via the router beside direct, warnings, summary."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.common.config import expected_duty
from loadtest.common.report import Figure
from loadtest.common.stream_load import warnings_for
from loadtest.router.config import TOKENS_RATIO_TARGET, RouterBenchConfig


@dataclass(frozen=True, slots=True)
class RouterFigure(Figure):
    """A figure through the router (``value``) beside the same figure direct (``baseline``)."""

    target: str = ""
    """What the ratio should be, in words ("" when there is none)."""

    @property
    def difference(self) -> float | None:
        """``value - baseline``: for latencies, what the router adds."""
        if self.value is None or self.baseline is None:
            return None
        return round(self.value - self.baseline, 3)

    def to_dict(self) -> dict[str, Any]:
        """JSON form, ratio and difference included."""
        return {**Figure.to_dict(self), "difference": self.difference}


def _pair(
    name: str, unit: str, router: dict[str, Any], direct: dict[str, Any], *keys: str
) -> RouterFigure:
    value: Any = router
    base: Any = direct
    for key in keys:
        value, base = value[key], base[key]
    return RouterFigure(name, unit, value, f"direct {name}", base)


def build_figures(results: dict[str, Any]) -> list[Figure]:
    """Every headline figure through the router beside the same figure direct."""
    figures: list[Figure] = []
    for key, pair in results.get("stream", {}).items():
        router, direct = pair["router"], pair["direct"]
        at = f"@{key}/s"
        figures.append(
            RouterFigure(
                f"delivered, {direct['sessions_opened']} sessions {at}",
                "tokens/s",
                router["tokens_per_s"],
                "direct tokens/s",
                direct["tokens_per_s"],
                target=f">= {TOKENS_RATIO_TARGET}x",
            )
        )
        for q in ("p50", "p99"):
            figures.append(
                _pair(f"ping RTT {q} under load {at}", "ms", router, direct, "ping_ms", q)
            )
        for q in ("p50", "p99"):
            figures.append(
                _pair(f"interrupt->done {q} {at}", "ms", router, direct, "interrupt_ms", q)
            )
        figures.append(
            _pair(
                f"worker CPU per delivered token {at}",
                "us",
                router,
                direct,
                "server_cpu_us_per_token",
            )
        )
        figures.append(
            RouterFigure(
                f"worker+router CPU per token {at}",
                "us",
                router["worker_plus_router_cpu_us_per_token"],
                "direct worker CPU per token",
                direct["server_cpu_us_per_token"],
            )
        )
    idle = results.get("idle")
    if idle:
        for q in ("p50", "p99"):
            figures.append(
                _pair(
                    f"ping RTT {q} idle ({idle['direct']['sessions_opened']} sessions)",
                    "ms",
                    idle["router"],
                    idle["direct"],
                    "ping_ms",
                    q,
                )
            )
    return figures


def added_latency(results: dict[str, Any]) -> dict[str, Any]:
    """Router minus direct ping RTT, per load, p50 and p99 (ms): the router's added latency."""
    loads: dict[str, dict[str, Any]] = {}
    if results.get("idle"):
        loads["idle"] = results["idle"]
    for key, pair in results.get("stream", {}).items():
        loads[f"stream@{key}/s"] = pair
    added: dict[str, Any] = {}
    for load, pair in loads.items():
        direct, router = pair["direct"]["ping_ms"], pair["router"]["ping_ms"]
        added[load] = {
            q: round(router[q] - direct[q], 3)
            if router[q] is not None and direct[q] is not None
            else None
            for q in ("p50", "p99")
        }
    return added


# -- warnings ---------------------------------------------------------------------------


def router_warnings(config: RouterBenchConfig, results: dict[str, Any]) -> list[str]:
    """Things that make a figure less trustworthy, or that look broken, in words."""
    notes: list[str] = []
    for key, pair in results.get("stream", {}).items():
        bench = config.at_rate(float(key))
        notes += [
            f"@{key}/s {n}" for n in warnings_for(bench, {"stream": pair}) if "CPU(s)" not in n
        ]
        direct, router = pair["direct"], pair["router"]
        ratio = router["tokens_per_s"] / direct["tokens_per_s"] if direct["tokens_per_s"] else 0
        if ratio < TOKENS_RATIO_TARGET:
            asked = direct["offered_tokens_per_s"] * expected_duty(bench)
            saturated = direct["tokens_per_s"] < 0.9 * asked
            notes.append(
                f"@{key}/s: delivered tokens/s via the router is {ratio:.2f}x direct, below the "
                f"{TOKENS_RATIO_TARGET}x target (router {router['router']['cpu_pct_of_core']}% of "
                f"a core, worker {router['cpu']['server_pct_of_core']}% vs "
                f"{direct['cpu']['server_pct_of_core']}% direct)"
                + (
                    "; the worker was saturated even directly, so on this machine the CPU the "
                    "router takes comes out of the worker's"
                    if saturated
                    else ""
                )
            )
        notes += _router_stats_notes(f"@{key}/s", router)
    if results.get("idle"):
        for target, r in results["idle"].items():
            for key in ("unanswered_pings", "dropped_sessions"):
                if r[key]:
                    notes.append(f"idle/{target}: {key} = {r[key]}")
            if r["sessions_opened"] < config.idle_sessions:
                notes.append(
                    f"idle/{target}: opened {r['sessions_opened']} of {config.idle_sessions} "
                    f"sessions {r['connect_failures']}"
                )
        notes += _router_stats_notes("idle", results["idle"]["router"])
    notes += _process_notes(results)
    if (os.cpu_count() or 1) <= 2:
        notes.append(
            f"only {os.cpu_count()} CPU(s): the worker, the router, redis-server, "
            f"{config.clients} client process(es) and the runner share them. Through the "
            "router, a saturated worker loses the CPU the router takes; on a deployment the "
            "router runs on other cores or machines, so read the router's CPU per token "
            "(its cost) beside the tokens/s ratio (this machine's capacity with both on it)"
        )
    return list(dict.fromkeys(notes))


def _router_stats_notes(prefix: str, router_result: dict[str, Any]) -> list[str]:
    stats = router_result.get("router_stats") or {}
    notes = []
    for key in ("refused", "worker_failures", "worker_refusals", "retries", "bad_requests"):
        if stats.get(key):
            notes.append(f"{prefix} router: {key} = {stats[key]} ({stats})")
    relayed = stats.get("connections_relayed")
    if relayed is not None and relayed < router_result["sessions_opened"]:
        notes.append(
            f"{prefix} router: relayed {relayed} connections for "
            f"{router_result['sessions_opened']} sessions"
        )
    return notes


def _process_notes(results: dict[str, Any]) -> list[str]:
    notes = []
    phases: list[tuple[str, dict[str, Any]]] = [
        (f"@{key}/s", pair) for key, pair in results.get("stream", {}).items()
    ]
    if results.get("idle"):
        phases.append(("idle", results["idle"]))
    for prefix, pair in phases:
        for target, r in pair.items():
            busy = r["cpu"]["machine_busy_pct"]
            if target == "router" and busy >= 90:
                notes.append(
                    f"{prefix} router: the machine was {busy}% busy: latencies through the router "
                    "include waiting for a CPU, not only the relay (the idle pair is the relay's "
                    "own latency)"
                )
            others = r["cpu"]["others_pct_of_core"]
            if others > 25:
                notes.append(
                    f"{prefix} {target}: other processes used {others}% of a core in the "
                    "window: its figures are disturbed"
                )
            for who, logged in (
                ("worker", r.get("worker_log_warnings")),
                (
                    "router",
                    r.get("router_log_warnings") or (r.get("router") or {}).get("log_warnings"),
                ),
            ):
                if logged and logged.get("count"):
                    notes.append(
                        f"{prefix} {target}: the {who} logged {logged['count']} "
                        f"warnings/errors: {logged['first'][:2]}"
                    )
    return notes


# -- printing -------------------------------------------------------------------------


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "tokens/s":
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def format_table(figures: Sequence[Figure]) -> str:
    """figure, direct, via router, router - direct, router / direct, target."""
    header = ("figure", "direct", "via router", "router - direct", "ratio", "target")
    rows = [header]
    for f in figures:
        difference = f.difference if isinstance(f, RouterFigure) else None
        target = f.target if isinstance(f, RouterFigure) else ""
        rows.append(
            (
                f"{f.name} ({f.unit})",
                _cell(f.baseline, f.unit),
                _cell(f.value, f.unit),
                "n/a" if difference is None else f"{difference:+,.2f}",
                "n/a" if f.ratio is None else f"{f.ratio:.2f}x",
                target,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            row[i].ljust(widths[i]) if i in (0, 5) else row[i].rjust(widths[i])
            for i in range(len(row))
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def print_summary(config: RouterBenchConfig, report: dict[str, Any], figures: list[Figure]) -> None:
    """The human-readable part."""
    git = report["environment"]["git"]
    print(
        f"\nrouter benchmark: {config.sessions} streaming sessions at "
        f"{' and '.join(f'{r:g}' for r in config.rates)} tokens/s per answer, "
        f"{config.answer_tokens} tokens per answer, 1 in {config.interrupt_every} interrupted, "
        f"{config.idle_sessions} idle sessions pinging every {config.idle_ping_interval:g} s, "
        f"{config.clients} client processes, {os.cpu_count()} CPUs, commit "
        f"{(git.get('commit') or '?')[:12]}{' (dirty)' if git.get('dirty') else ''}\n"
    )
    print(format_table(figures))
    results = report["results"]
    added = results.get("router_added_ping_ms", {})
    if added:
        print(
            "\nrouter's added ping RTT (router - direct, ms): "
            + ", ".join(f"{load} p50 {a['p50']:+} p99 {a['p99']:+}" for load, a in added.items())
        )
    for key, pair in results.get("stream", {}).items():
        for target in ("direct", "router"):
            r = pair[target]
            cpu = r["cpu"]
            print(
                f"\n@{key}/s {target}: {r['tokens_per_s']:,.0f} tokens/s of ~"
                f"{r['offered_tokens_per_s']:,.0f} offered, {r['frames_per_s']:,.0f} delta "
                f"frames/s ({r['tokens_per_frame']} tokens/frame), decode steps/s "
                f"{r['decode_steps_per_s']}, CPU % of a core: worker {cpu['server_pct_of_core']},"
                f" router {cpu['router_pct_of_core']}, redis {cpu['redis_pct_of_core']}, clients "
                f"{cpu['clients_pct_of_core']}, others {cpu['others_pct_of_core']}; machine "
                f"{cpu['machine_busy_pct']}% busy; samples {r['ping_ms']['count']} pings, "
                f"{r['interrupt_ms']['count']} interrupts; done {r['done_statuses']}"
            )
            if target == "router":
                use = r["router"]
                print(
                    f"  router: {use['cpu_us_per_delta_frame']} us CPU per relayed delta frame, "
                    f"{use['cpu_us_per_token']} us per token (the worker: "
                    f"{r['server_cpu_us_per_token']} us per token); stats {r['router_stats']}"
                )
    for target, r in (results.get("idle") or {}).items():
        cpu = r["cpu"]
        print(
            f"\nidle {target}: {r['pings_per_s']:,.0f} pings/s timed, ping p50/p99/max "
            f"{r['ping_ms']['p50']}/{r['ping_ms']['p99']}/{r['ping_ms']['max']} ms, CPU % of a "
            f"core: worker {cpu['worker_pct_of_core']}, router {cpu['router_pct_of_core']}, "
            f"clients {cpu['clients_pct_of_core']}, others {cpu['others_pct_of_core']}"
        )
    for name, rounds in results.get("rounds", {}).items():
        if len(rounds) > 2:
            print(f"\n{name} rounds (figures use each target's least disturbed one):")
            for r in rounds:
                tokens = r["tokens_per_s"]
                print(
                    f"  round {r['round']} {r['target']}: "
                    + (f"{tokens:,.0f} tokens/s, " if tokens is not None else "")
                    + f"ping p50 {r['ping_ms']['p50']} ms, others {r['cpu']['others_pct_of_core']}%"
                )
    for note in report["warnings"]:
        print(f"\nnote: {note}")

"""``python -m loadtest SCENARIO [options]``: one command for every load test.

A session scenario (``chat``, ``voice``, ``barge-in``, ``handoff``, ``reconnect-storm``,
``slow-clients``, ``mixed``) runs against ``--url`` or a local worker, then the same load
against the local bare server (the baseline), each bounded by ``--duration`` +
``--drain``; it prints the figures with baseline and ratio, and writes the JSON report
with PNG plots beside it. A benchmark name (``stream``, ``store``, ...) runs
``python -m loadtest.<module>`` with the rest of the command line, as before.

Exit status: 0; 1 when resumed sessions lost or doubled events; 2 for a bad
configuration; 3 when the duration bound cut the run.
"""

from __future__ import annotations

import argparse
import asyncio
import runpy
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from loadtest.command.catalog import SCENARIOS, available_benchmarks, listing
from loadtest.command.figures import build_figures, report_of, resumes_broken
from loadtest.command.options import (
    Settings,
    SettingsError,
    add_flags,
    public_url,
    settings_from,
)
from loadtest.command.plots import write_plots
from loadtest.command.runner import Outcome, drive
from loadtest.command.targets import baseline, under_test
from loadtest.common.clients import raise_fd_limit
from loadtest.common.environment import environment
from loadtest.common.report import format_table, write_json

EXIT_BROKEN, EXIT_CONFIG, EXIT_CUT = 1, 2, 3


def build_parser() -> argparse.ArgumentParser:
    """The session scenarios' parser (benchmarks parse their own flags)."""
    p = argparse.ArgumentParser(
        prog="python -m loadtest",
        description="Load a worker, router or cluster with one scenario; report and plots.",
        epilog="Scenarios:\n" + listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scenario", nargs="?", help="what to run (--list names them)")
    p.add_argument("--list", action="store_true", help="list the scenarios, one line each")
    add_flags(p)
    return p


async def _run(scenario: str, settings: Settings) -> tuple[Outcome, Outcome | None, str]:
    with tempfile.TemporaryDirectory(prefix="loadtest-") as logs:
        log_dir = Path(logs)
        with under_test(settings, scenario, log_dir) as target:
            label = f"{scenario} @ {target.name}"
            measured = await drive(scenario, settings, target.url, label=label, rss=target.rss)
            url = target.url
        base = None
        if settings.baseline:
            with baseline(settings, log_dir) as bare:
                base = await drive(
                    scenario, settings, bare.url, label=f"{scenario} @ bare", rss=bare.rss
                )
    return measured, base, url


def run_scenario(scenario: str, settings: Settings) -> int:
    """Both runs, the table, the report and the plots; the exit status."""
    raise_fd_limit()
    return asyncio.run(run_scenario_async(scenario, settings))


async def run_scenario_async(scenario: str, settings: Settings) -> int:
    """:func:`run_scenario` in a running loop (several scenarios can share one)."""
    started = datetime.now().isoformat(timespec="seconds")
    measured, base, url = await _run(scenario, settings)
    report = report_of(
        scenario,
        settings,
        measured,
        base,
        target_url=public_url(url),  # the report never keeps a credential
        environment={**environment(), "started_at": started},
    )
    # Off the loop: the plots take a while, and other runs may share this loop.
    plots = await asyncio.to_thread(write_plots, report, settings.report)
    report["plots"] = [p.name for p in plots]
    write_json(settings.report, report)
    figures = build_figures(scenario, settings, measured, base)
    where = "remote target" if settings.url else "local worker"
    print(f"\n{scenario}: {settings.sessions} sessions, {settings.duration:g} s ({where})")
    print(format_table(figures, value_header="target"))
    for warning in report["warnings"]:
        print(f"warning: {warning}")
    print(f"report: {settings.report}")
    for plot in plots:
        print(f"plot: {plot}")
    if report["cut"]:
        return EXIT_CUT
    return EXIT_BROKEN if resumes_broken(measured) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    benchmarks = available_benchmarks()
    if args_in and args_in[0] in benchmarks:
        module = benchmarks[args_in[0]][0]
        saved, sys.argv = sys.argv, [f"python -m {module}", *args_in[1:]]
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as done:
            return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        finally:
            sys.argv = saved
        return 0
    parser = build_parser()
    args = parser.parse_args(args_in)
    if args.list:
        print(listing())
        return 0
    if args.scenario not in SCENARIOS:
        parser.print_usage(sys.stderr)
        what = f"unknown scenario {args.scenario!r}" if args.scenario else "name a scenario"
        print(f"python -m loadtest: {what}; --list names them", file=sys.stderr)
        return EXIT_CONFIG
    try:
        settings = settings_from(args, args.scenario)
    except SettingsError as exc:
        print(f"python -m loadtest: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    return run_scenario(args.scenario, settings)

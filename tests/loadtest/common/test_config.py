"""The one configuration every benchmark extends: shared flags, shared checks, report path."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import pytest

from loadtest.auth.__main__ import build_parser as auth_parser
from loadtest.common.config import REPORTS, LoadConfig, StreamLoadConfig
from loadtest.engines.config import build_parser as engines_parser
from loadtest.fuzz.__main__ import build_parser as fuzz_parser
from loadtest.fuzz.__main__ import resolve_config as fuzz_config
from loadtest.partial_json.__main__ import build_parser as partial_json_parser
from loadtest.router.config import build_parser as router_parser
from loadtest.router.config import resolve_config as router_config
from loadtest.slow_consumer.__main__ import build_parser as slow_consumer_parser
from loadtest.store.config import build_parser as store_parser
from loadtest.store.config import resolve_config as store_config
from loadtest.stream.config import build_parser as stream_parser
from loadtest.stream.config import resolve_config as stream_config
from loadtest.voice.config import build_parser as voice_parser
from loadtest.voice.config import resolve_config as voice_config

PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {
    "stream": stream_parser,
    "store": store_parser,
    "router": router_parser,
    "voice": voice_parser,
    "auth": auth_parser,
    "slow_consumer": slow_consumer_parser,
    "fuzz": fuzz_parser,
    "partial_json": partial_json_parser,
    "engines": engines_parser,
}

LOADS: dict[str, Callable[[argparse.Namespace], LoadConfig]] = {
    "stream": stream_config,
    "store": store_config,
    "router": router_config,
    "voice": voice_config,
}


@pytest.mark.parametrize("benchmark", PARSERS)
def test_every_command_is_named_after_its_folder_and_takes_report(benchmark: str) -> None:
    parser = PARSERS[benchmark]()
    assert parser.prog == f"python -m loadtest.{benchmark}"
    assert parser.parse_args(["--report", "out.json"]).report == Path("out.json")


@pytest.mark.parametrize("benchmark", LOADS)
def test_every_load_takes_the_shared_flags_into_the_shared_fields(benchmark: str) -> None:
    argv = ["--quick", "--clients=3", "--connect-concurrency=7", "--drain=4"]
    args = PARSERS[benchmark]().parse_args([*argv, "--worker-arg=--vad=energy"])
    config = LOADS[benchmark](args)
    assert isinstance(config, LoadConfig)
    assert (config.clients, config.connect_concurrency, config.drain) == (3, 7, 4.0)
    assert config.quick
    assert config.worker_args == ["--vad=energy"]
    assert config.report.parent == REPORTS


@pytest.mark.parametrize("benchmark", LOADS)
def test_every_load_refuses_bad_shared_flags_in_its_own_name(benchmark: str) -> None:
    args = PARSERS[benchmark]().parse_args(["--quick", "--clients=17"])
    with pytest.raises(SystemExit, match=rf"^loadtest\.{benchmark}: --clients must be 1\.\.16"):
        LOADS[benchmark](args)


@pytest.mark.parametrize("benchmark", ["stream", "store", "router"])
def test_the_streaming_loads_check_their_answers_alike(benchmark: str) -> None:
    args = PARSERS[benchmark]().parse_args(
        ["--quick", "--answer-tokens=10", "--interrupt-after=10"]
    )
    with pytest.raises(
        SystemExit, match="--answer-tokens must be >= 2 and above --interrupt-after"
    ):
        LOADS[benchmark](args)
    args = PARSERS[benchmark]().parse_args(["--quick", "--ping-interval=-1"])
    with pytest.raises(SystemExit, match="--ping-interval, --interrupt-every and --drain"):
        LOADS[benchmark](args)


def test_interrupt_after_defaults_to_half_an_answer() -> None:
    config = stream_config(stream_parser().parse_args(["--quick", "--answer-tokens=40"]))
    assert config.interrupt_after == 20


def test_a_load_at_another_rate_keeps_its_own_fields_and_adds_worker_flags() -> None:
    args = store_parser().parse_args(["--quick", "--storm-sessions=50", "--worker-arg=--a=1"])
    config = store_config(args)
    moved = config.at_rate(7.0, "--store=redis://127.0.0.1:1")
    assert type(moved) is type(config)
    assert moved.decode_rate == 7.0
    assert moved.storm_sessions == 50
    assert moved.worker_args == ["--a=1", "--store=redis://127.0.0.1:1"]
    assert config.worker_args == ["--a=1"]


def test_the_stream_benchmark_counts_idle_sessions_in_its_idle_phase() -> None:
    config = stream_config(stream_parser().parse_args(["--quick", "--idle-sessions=30"]))
    assert (config.sessions_in("stream"), config.sessions_in("idle")) == (100, 30)
    router = router_config(router_parser().parse_args(["--quick", "--idle-sessions=5"]))
    assert isinstance(router, StreamLoadConfig)
    assert router.sessions_in("stream") == router.sessions


def test_the_profiles_fill_what_no_flag_gave() -> None:
    quick = voice_config(voice_parser().parse_args(["--quick", "--duration=3"]))
    assert (quick.warmup, quick.duration, quick.ladder) == (1.0, 3.0, (20, 60))
    full = router_config(router_parser().parse_args([]))
    assert (full.sessions, full.decode_rate, full.saturation_rate) == (1000, 3.0, 50.0)


def test_the_fuzz_report_goes_where_every_report_goes() -> None:
    config = fuzz_config(fuzz_parser().parse_args(["--inputs=10"]))
    assert config.report.parent == REPORTS
    assert config.report.name.startswith("fuzz-")

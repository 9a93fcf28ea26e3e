"""``loadtest.workers``' flags: the shared ones, its own, and what it refuses."""

from __future__ import annotations

import pytest

from loadtest.common.config import REPORTS
from loadtest.workers.config import build_parser, resolve_config


def test_the_profiles_and_the_shared_flags() -> None:
    quick = resolve_config(build_parser().parse_args(["--quick", "--clients=3"]))
    assert (quick.sessions, quick.decode_rate, quick.rounds, quick.workers) == (200, 50.0, 1, 2)
    assert quick.clients == 3
    assert quick.report.parent == REPORTS
    full = resolve_config(build_parser().parse_args(["--workers=4", "--decode-rate=5"]))
    assert (full.sessions, full.decode_rate, full.rounds, full.workers) == (1000, 5.0, 2, 4)


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--workers=1"], "--workers must be 2..64"),
        (["--rounds=9"], "--rounds must be 1..5"),
        (["--sessions=1", "--clients=2"], "--sessions must be from --clients"),
        (["--worker-arg=--store=memory"], "--store and --workers are set by the benchmark"),
        (["--worker-arg=--workers=3"], "--store and --workers are set by the benchmark"),
    ],
)
def test_what_it_refuses(flags: list[str], problem: str) -> None:
    with pytest.raises(SystemExit, match=rf"^loadtest\.workers: .*{problem}"):
        resolve_config(build_parser().parse_args(["--quick", *flags]))

"""Hostile configuration files: each is refused by name (exit 2), never a traceback mid-run."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.command.main import EXIT_CONFIG, main

HOSTILE = [
    ('{"mix": {"chat": "x"}}', "mix weights"),
    ('{"mix": {"chat": 0}}', "mix weights"),
    ('{"mix": {"chat": 1e400}}', "mix weights"),
    ('{"mix": {"chat": NaN}}', "mix weights"),
    ('{"mix": {"chat": true}}', "mix weights"),
    ('{"ramp": NaN}', "finite"),
    ('{"think": Infinity}', "finite"),
    ('{"rate": Infinity}', "finite"),
    ('{"slow_read_s": NaN}', "finite"),
    ('{"slow_read_s": -1}', "slow-read-s"),
    ('{"worker_args": [1, 2]}', "worker_args"),
    ('{"worker_args": "--store=memory"}', "worker_args"),
    ('{"answer_tokens": 1000000000000}', "answer_tokens"),
]


@pytest.mark.parametrize(("content", "message"), HOSTILE, ids=[c for c, _ in HOSTILE])
def test_a_hostile_config_file_exits_2_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    config = tmp_path / "hostile.json"
    config.write_text(content)
    report = tmp_path / "r.json"
    # A refusing target and a short bound: were the file let through, the run ends soon.
    bounded = ["--url", "ws://127.0.0.1:1/", "--duration", "0.5", "--drain", "0.5"]
    argv = ["mixed", "--config", str(config), "--report", str(report), *bounded]
    code = main([*argv, "--no-progress", "--no-baseline"])
    err = capsys.readouterr().err
    assert code == EXIT_CONFIG, err
    assert message in err and "Traceback" not in err
    assert not report.exists()


def test_a_credential_in_the_url_stays_out_of_the_report_and_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    url = "ws://ops:pass-in-userinfo@127.0.0.1:1/v1?token=wct_in_the_query"
    argv = ["chat", "--url", url, "--duration", "0.5", "--drain", "0.5", "--sessions", "1"]
    code = main([*argv, "--report", str(report), "--no-progress", "--no-baseline"])
    out = capsys.readouterr()
    assert code == 1  # nothing listens there: no session opened
    written = report.read_text()
    for secret in ("pass-in-userinfo", "wct_in_the_query"):
        assert secret not in written and secret not in out.out + out.err, secret
    assert '"url": "ws://127.0.0.1:1/v1"' in written


@pytest.mark.parametrize("url", ["ws://[x/v1", "ws://127.0.0.1:99999/v1", "ws:///v1"])
def test_a_url_no_client_can_open_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    argv = ["chat", "--url", url, "--duration", "0.5", "--report", str(tmp_path / "r.json")]
    code = main([*argv, "--no-progress", "--no-baseline"])
    err = capsys.readouterr().err
    assert code == EXIT_CONFIG and "url" in err and "Traceback" not in err, err

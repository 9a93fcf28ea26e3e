"""The ``wsserver`` command as a user runs it: real subprocesses."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.processes import WSSERVER
from tests.processes import cli_env as _env


@pytest.mark.parametrize(
    "command",
    [[], ["serve"], ["chat"], ["router"], ["usage"], ["keys"], ["keys", "new"], ["keys", "hash"]],
)
def test_help(command: list[str]) -> None:
    result = subprocess.run(
        [*WSSERVER, *command, "--help"], capture_output=True, text=True, env=_env(), timeout=30
    )
    assert result.returncode == 0
    assert "usage: wsserver" in result.stdout


@pytest.mark.parametrize(
    "command", [WSSERVER, [sys.executable, "-m", "wsserver.cli"]], ids=["main", "package"]
)
def test_the_exit_status_is_the_subcommand_s(command: list[str]) -> None:
    # An empty stdin is an error of ``keys hash``: status 2, whichever way it is run.
    result = subprocess.run(
        [*command, "keys", "hash", "--principal", "alice"],
        input="",
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "no key on stdin" in result.stderr


@pytest.mark.parametrize("command", ["serve", "router"])
def test_listening_beyond_loopback_without_credentials_is_refused(command: str) -> None:
    result = subprocess.run(
        [*WSSERVER, command, "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "no credentials configured" in result.stderr
    assert "--auth none" in result.stderr

"""Numbers no setting means are refused where the command is read, with the setting's
name, whichever way they come (flag or environment variable, worker or router)."""

from __future__ import annotations

import subprocess

import pytest
from pydantic import ValidationError

from tests.processes import WSSERVER, cli_env
from wsserver.router.settings import RouterSettings
from wsserver.settings_bounds import MAX_SETTING_NUMBER
from wsserver.worker.settings import Settings


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e309", "1e308", "-1e10"])
def test_a_worker_setting_past_any_meaning_is_refused(value: str) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings.from_env({"lease_ttl": value})
    assert "lease_ttl" in str(refused.value)


def test_a_router_setting_past_any_meaning_is_refused() -> None:
    with pytest.raises(ValidationError, match="linger_timeout must be at most"):
        RouterSettings.from_env({"linger_timeout": "1e308"})


def test_the_bound_itself_is_taken() -> None:
    settings = Settings.from_env(
        {"session_ttl": str(MAX_SETTING_NUMBER), "grace_period": str(MAX_SETTING_NUMBER)}
    )
    assert settings.session_ttl == MAX_SETTING_NUMBER


@pytest.mark.parametrize(
    ("command", "variable"),
    [("serve", "WSSERVER_LEASE_TTL"), ("router", "WSSERVER_ROUTER_LINGER_TIMEOUT")],
)
def test_an_environment_variable_past_the_bound_exits_2_without_a_traceback(
    command: str, variable: str
) -> None:
    result = subprocess.run(
        [*WSSERVER, command, "--port", "0"],
        capture_output=True,
        text=True,
        env=cli_env(**{variable: "1e308"}),
        timeout=30,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "must be at most 1e+09" in result.stderr
    assert "Traceback" not in result.stderr

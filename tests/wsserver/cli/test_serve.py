"""``wsserver serve``: settings from flags and the environment, checked before it starts."""

from __future__ import annotations

import subprocess

from tests.processes import WSSERVER
from tests.processes import cli_env as _env


def test_serve_rejects_invalid_settings() -> None:
    result = subprocess.run(
        [*WSSERVER, "serve", "--decode-rate", "-3"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "decode_rate" in result.stderr


def test_serve_names_an_unknown_store_without_a_traceback() -> None:
    result = subprocess.run(
        [*WSSERVER, "serve", "--port", "0", "--store", "foo"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 2
    assert "--store: unknown store 'foo'" in result.stderr
    assert "Traceback" not in result.stderr

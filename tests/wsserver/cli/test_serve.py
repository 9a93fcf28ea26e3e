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

"""``wsserver keys``: new keys printed once, their hashed keys-file lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.processes import WSSERVER
from tests.processes import cli_env as _env
from wsserver.frontdoor.api_keys import key_line


def test_keys_new_appends_a_hashed_line_and_prints_the_key_once(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    result = subprocess.run(
        [*WSSERVER, "keys", "new", "--principal", "alice", "--keys-file", str(keys_file)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip()
    assert key.startswith("wsk_")
    line = keys_file.read_text()
    assert key not in line
    assert line == key_line("alice", key) + "\n"
    assert keys_file.stat().st_mode & 0o077 == 0  # readable by its owner only
    hashed = subprocess.run(
        [*WSSERVER, "keys", "hash", "--principal", "alice", "--admin"],
        input=key + "\n",
        capture_output=True,
        text=True,
        env=_env(),
        timeout=30,
    )
    assert hashed.stdout.strip() == key_line("alice", key, admin=True)

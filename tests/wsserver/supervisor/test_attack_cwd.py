"""Attacks on how a group starts its workers: from a directory holding another wsserver.

The parent runs the installed wsserver; its workers must too. Started as
``python -m wsserver.cli.main`` they put the current directory first on ``sys.path``,
so a source checkout of another version there (an operator's clone, an old release)
ran as the workers while the parent ran the installed one.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.processes import cli_env

CONSOLE_SCRIPT = str(Path(sys.executable).parent / "wsserver")
STORE = ("--store", "redis://127.0.0.1:1/0")  # unreachable: the workers start without it


def test_workers_run_the_parents_wsserver_not_one_in_the_current_directory(
    tmp_path: Path,
) -> None:
    shadow = tmp_path / "wsserver" / "cli"
    shadow.mkdir(parents=True)
    (tmp_path / "wsserver" / "__init__.py").write_text("")
    (shadow / "__init__.py").write_text("")
    (shadow / "main.py").write_text("print('shadow ran', flush=True)\nraise SystemExit(3)\n")
    env = cli_env()
    del env["PYTHONPATH"]  # as an operator runs it: the installed package, nothing else
    group = subprocess.Popen(
        [CONSOLE_SCRIPT, "serve", *("--workers", "2", "--port", "0"), *STORE],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    try:
        assert group.stdout is not None
        for line in group.stdout:  # until the banner, or the end of a failed group
            lines.append(line)
            if "wsserver listening on" in line:
                break
    finally:
        group.send_signal(signal.SIGTERM)
        try:
            group.wait(30)
        except subprocess.TimeoutExpired:
            group.kill()
            group.wait(10)
    assert any("wsserver listening on" in line for line in lines), lines
    assert not any("shadow" in line for line in lines), lines

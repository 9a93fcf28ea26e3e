"""Attacks on ``--admin-port`` in a group: worker ``i`` listens on ``A + i``."""

from __future__ import annotations

import subprocess

from tests.processes import WSSERVER, cli_env, run_serve
from tests.wsserver.supervisor.group_processes import free_port_pair


def test_an_admin_range_that_covers_the_port_is_refused() -> None:
    # --port P --admin-port P-1: worker 1's admin listener (SO_REUSEPORT, as the group's
    # port) joined the port's group, and the kernel gave it a share of the WebSocket
    # upgrades, answered 404 (3 of 12 in a manual run).
    admin = free_port_pair()
    flags = ("--workers", "2", "--store", "redis://127.0.0.1:1/0")
    result = subprocess.run(
        [*WSSERVER, "serve", "--port", str(admin + 1), "--admin-port", str(admin), *flags],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=30,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"--admin-port {admin} gives the workers ports {admin}-{admin + 1}" in result.stderr
    assert "listening on" not in result.stdout


def test_an_admin_range_past_the_last_port_is_refused_by_the_group() -> None:
    # Worker 1 would get port 65536: refused up front, not by a worker's settings.
    flags = ("--workers", "2", "--store", "redis://127.0.0.1:1/0", "--port", "0")
    result = run_serve("--admin-port", "65535", *flags)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--admin-port 65535 with --workers 2 needs ports 65535-65536" in result.stderr
    assert "Traceback" not in result.stderr and "listening on" not in result.stdout

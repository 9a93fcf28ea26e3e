"""The machine, versions and source tree a report's figures came from."""

from __future__ import annotations

import hashlib
import os
import platform
import resource
import subprocess
from importlib.metadata import version
from typing import Any

import psutil

from loadtest.common.servers import REPO_ROOT


def _git_state() -> dict[str, Any]:
    """Commit and dirtiness of the tree under test (the worker runs from it)."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
        )
        return done.stdout.strip()

    try:
        changed = [line.split(maxsplit=1)[-1] for line in git("status", "--porcelain").splitlines()]
        diff = git("diff", "HEAD")
        return {
            "commit": git("rev-parse", "HEAD"),
            "dirty": bool(changed),
            # Others may be editing the tree: name what differed from the commit, and how.
            "changed_files": changed,
            "diff_sha1": hashlib.sha1(diff.encode()).hexdigest() if diff else None,
        }
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def environment() -> dict[str, Any]:
    """The machine, versions and source tree the figures came from."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "websockets": version("websockets"),
        "nofile_limit": [soft, hard],
        "git": _git_state(),
    }

"""The unmodified ``openai`` SDK's Python, for tests that use it as a client.

The SDK pins ``websockets<16``, so it lives in its own environment, which
``./scripts/test`` makes (``.venv-openai-sdk``) and names in
``WSSERVER_OPENAI_SDK_PYTHON``. A test that needs it fails when it is missing: it is
never skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DEFAULT = Path(__file__).resolve().parent.parent / ".venv-openai-sdk" / "bin" / "python"


def openai_sdk_python() -> str:
    """The path of a Python with ``openai[realtime]`` installed (fails the test if none)."""
    named = os.environ.get("WSSERVER_OPENAI_SDK_PYTHON")
    path = Path(named) if named else DEFAULT
    if not path.exists():
        pytest.fail(
            f"no openai SDK environment at {path}: run ./scripts/test, or make one with "
            "python3 -m venv .venv-openai-sdk && "
            ".venv-openai-sdk/bin/pip install 'openai[realtime]==3.57.0'"
        )
    return str(path)

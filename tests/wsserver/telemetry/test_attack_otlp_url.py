"""An OTLP endpoint with a credential in it (``user:password@``): refused or not, the
worker's messages never print the password."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.processes import cli_env
from tests.wsserver.telemetry.test_traces import _WITHOUT_EXTRA
from wsserver.telemetry.errors import TelemetryConfigError
from wsserver.telemetry.tracing import start_tracing

SECRET = "s3cret-in-the-url"


def test_a_refused_endpoint_names_it_without_its_password() -> None:
    with pytest.raises(TelemetryConfigError) as refused:
        start_tracing(f"ftp://ops:{SECRET}@collector:4318", service_name="t")
    assert SECRET not in str(refused.value) and "collector:4318" in str(refused.value)


def test_the_missing_extra_message_names_the_endpoint_without_its_password() -> None:
    env = cli_env(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://ops:{SECRET}@127.0.0.1:9")
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRA], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "127.0.0.1:9" in out.stderr and SECRET not in out.stdout + out.stderr

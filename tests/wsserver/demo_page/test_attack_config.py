"""Demo page settings that cannot work are refused at startup, with the flag to fix,
instead of a page that loads and then fails on every visitor's token request."""

from __future__ import annotations

import subprocess

import pytest

from tests.processes import WSSERVER, cli_env
from tests.wsserver.frontdoor.credentials import Credentials, make_credentials


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    return make_credentials(tmp_path_factory.mktemp("demo-attack-config"))


def serve(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WSSERVER, "serve", "--port", "0", *flags],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=20,
    )


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        # A principal to mint for, and no secret to mint with.
        (("--demo-page", "on", "--demo-principal", "alice"), "--client-token-secret-file"),
        # Not a principal name (the token endpoint refuses such names too).
        (
            (
                "--demo-page",
                "on",
                "--demo-principal",
                "alice smith",
                "--client-token-secret-file",
                "{secret}",
            ),
            "--demo-principal",
        ),
        # A principal for a page 'auto' does not serve with authentication on.
        (("--demo-principal", "alice", "--client-token-secret-file", "{secret}"), "--demo-page on"),
    ],
)
def test_a_demo_page_that_cannot_work_is_refused_at_startup(
    creds: Credentials, flags: tuple[str, ...], named: str
) -> None:
    flags = tuple(flag.replace("{secret}", creds.token_secret_file) for flag in flags)
    done = serve("--api-keys-file", creds.keys_file, *flags)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert named in done.stderr and "Traceback" not in done.stderr

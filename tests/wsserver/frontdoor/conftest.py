from __future__ import annotations

from pathlib import Path

import pytest

from tests.wsserver.frontdoor.credentials import Credentials, make_credentials


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> Credentials:
    """Keys, secrets and a JWKS shared by a module's tests (RSA keys are slow to make)."""
    folder: Path = tmp_path_factory.mktemp("credentials")
    return make_credentials(folder)

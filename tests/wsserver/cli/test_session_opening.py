"""Opening the session of ``wsserver chat``: why it cannot, said once, with an exit status."""

from __future__ import annotations

import socket

import pytest

from wsserver.cli.main import build_parser
from wsserver.cli.session_opening import CommandFailed, opened_client


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_server_that_is_not_there_is_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"ws://127.0.0.1:{_free_port()}"
    args = build_parser().parse_args(["chat", "--url", url, "--open-timeout", "2"])
    with pytest.raises(CommandFailed) as failed:
        await opened_client(args)
    assert failed.value.status == 1
    assert f"cannot open a session at {url}" in capsys.readouterr().err


async def test_a_key_the_handshake_cannot_carry_is_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["chat", "--api-key", "bad\nkey"])
    with pytest.raises(CommandFailed) as failed:
        await opened_client(args)
    assert failed.value.status == 2
    err = capsys.readouterr().err
    assert err.startswith("wsserver chat: ")
    assert "bad\nkey" not in err

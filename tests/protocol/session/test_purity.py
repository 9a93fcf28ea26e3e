"""The session core is sans-I/O: it imports no loop, socket, store or clock, and does no I/O."""

from __future__ import annotations

import protocol.session
from protocol.generation import FinishReason
from tests.protocol.io_audit import io_imports, watch_io
from tests.protocol.session.drive import WEATHER, Driver


def test_the_session_package_imports_no_io() -> None:
    assert io_imports("protocol.session") == []
    assert len(protocol.session.__all__) > 0


def test_no_protocol_module_imports_io() -> None:
    assert io_imports("protocol") == []


def test_the_import_check_could_fail() -> None:
    """The walk sees an I/O import where there is one (the WebSocket transport's)."""
    assert "wsserver.transport.websocket: asyncio" in io_imports("wsserver.transport")


def test_a_tool_round_does_no_io() -> None:
    with watch_io() as seen:
        drive = Driver(tools=[WEATHER])
        response = drive.start()
        drive.fragment(response, "c1", '{"city": "Paris"}')
        drive.fragment(response, "c1", complete=True)
        drive.finish(response, FinishReason.TOOL_CALLS)
        drive.read()
    assert seen == []

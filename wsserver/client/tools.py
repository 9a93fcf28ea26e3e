"""The SDK's side of the tool loop: handlers, results sent once, resent if unseen.

A handler runs at most once per call id: its result is kept until the server
acknowledges it (``tool.result.accepted``), and sent again after a reconnect if
the acknowledgement never came; the server applies it once either way. Calls a
resumed session announces as pending (``session.ready`` ``pending_tool_calls``)
run if they never ran here, or get their kept result again.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection

from wsserver.client.errors import ClientError
from wsserver.client.reconnect import ReconnectingConnection

log = logging.getLogger(__name__)

ToolHandler = Callable[..., Any] | Callable[..., Awaitable[Any]]
"""Called with the call's arguments as keyword arguments; returns any JSON value."""

_KEPT_RESULTS = 256


class ToolBox:
    """Declared tools, their handlers, and the results not yet acknowledged."""

    def __init__(self) -> None:
        self.specs: dict[str, dict[str, Any]] = {}
        self.handlers: dict[str, ToolHandler] = {}
        self.unacknowledged: dict[str, dict[str, Any]] = {}
        """Call id → the ``tool.result`` sent and not yet acknowledged."""
        self.started: OrderedDict[str, None] = OrderedDict()
        """Calls whose handler ran or runs here (never twice)."""

    def register(
        self,
        name: str,
        handler: ToolHandler | None,
        *,
        description: str = "",
        parameters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Declare a tool (and how to run it); returns its spec."""
        spec = {
            "name": name,
            "description": description,
            "parameters": parameters or {"type": "object"},
        }
        self.specs[name] = spec
        if handler is not None:
            self.handlers[name] = handler
        return spec

    def declarations(self) -> list[dict[str, Any]] | None:
        """The tools for ``session.start`` (``None`` when there are none)."""
        return list(self.specs.values()) or None

    def claim(self, call: dict[str, Any]) -> bool:
        """Whether this call should run here now (a handler exists, it never ran)."""
        call_id = call["call_id"]
        if call.get("name") not in self.handlers or call_id in self.started:
            return False
        self.started[call_id] = None
        while len(self.started) > _KEPT_RESULTS:
            self.started.popitem(last=False)
        return True

    async def run(self, call: dict[str, Any]) -> dict[str, Any]:
        """Run a call's handler; the ``tool.result`` message to send."""
        handler = self.handlers[call["name"]]
        arguments = call.get("arguments") or {}
        # The call id doubles as the request id: a refusal names it, and it is not resent.
        message: dict[str, Any] = {
            "type": "tool.result",
            "call_id": call["call_id"],
            "id": call["call_id"],
        }
        try:
            if inspect.iscoroutinefunction(handler):
                output = await handler(**arguments)
            else:
                # A blocking tool must not stall the connection's reader and heartbeats.
                output = await asyncio.to_thread(handler, **arguments)
        except Exception as exc:  # the model is told the tool failed, with why
            log.warning("tool %s failed: %s", call["name"], exc)
            message["error"] = f"{type(exc).__name__}: {exc}"
        else:
            message["output"] = output
        self.unacknowledged[call["call_id"]] = message
        return message

    def acknowledged(self, call_id: str) -> None:
        """The server has the result (applied now or before)."""
        self.unacknowledged.pop(call_id, None)


def describe_handler(handler: ToolHandler) -> dict[str, Any]:
    """A tool's description and parameters from its handler's attributes, if it has them."""
    return {
        "description": getattr(handler, "description", None) or (handler.__doc__ or "").strip(),
        "parameters": getattr(handler, "parameters", None),
    }


class ToolExecutor:
    """Runs the handlers of a session's tool calls as they arrive and sends their results."""

    def __init__(
        self,
        toolbox: ToolBox,
        connection: ReconnectingConnection,
        *,
        run_tools: bool,
    ) -> None:
        """``connection``: carries the results, once the session is connected."""
        self.toolbox = toolbox
        self.run_tools = run_tools
        """Whether calls run here by themselves (False: the application answers them)."""
        self._connection = connection
        self._tasks: set[asyncio.Task[None]] = set()

    async def send_result(self, call_id: str, output: Any = None, *, error: str | None) -> None:
        """Send the application's own result of a call (kept until acknowledged)."""
        message: dict[str, Any] = {
            "type": "tool.result",
            "call_id": call_id,
            "output": output,
            "id": call_id,
        }
        if error is not None:
            message["error"] = error
        self.toolbox.unacknowledged[call_id] = message
        await self._connection.send(message)

    def on_event(self, event: dict[str, Any]) -> None:
        """Run a new call; forget a result the server acknowledged or refused for good."""
        kind = event.get("type")
        if kind == "response.tool_call" and self.run_tools and self.toolbox.claim(event):
            self._spawn(event)
        elif kind == "tool.result.accepted":
            self.toolbox.acknowledged(event["call_id"])
        elif kind == "error" and event.get("code") in ("tool_call_closed", "unknown_tool_call"):
            # Refused for good: sending it again after a reconnect would change nothing.
            self.toolbox.acknowledged(str(event.get("request_id")))

    async def after_ready(self, ws: ClientConnection, ready: dict[str, Any]) -> None:
        """Resend the results not acknowledged; run pending calls that never ran here."""
        for message in list(self.toolbox.unacknowledged.values()):
            await ws.send(self._connection.codec.encode(message))
        for call in ready.get("pending_tool_calls", []):
            unsent = call["call_id"] not in self.toolbox.unacknowledged
            if unsent and self.run_tools and self.toolbox.claim(call):
                self._spawn(call)

    def _spawn(self, call: dict[str, Any]) -> None:
        async def run() -> None:
            message = await self.toolbox.run(call)
            with contextlib.suppress(ClientError):
                await self._connection.send(message)

        task = asyncio.get_running_loop().create_task(run())
        # Held until done: the loop keeps only weak references to tasks.
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

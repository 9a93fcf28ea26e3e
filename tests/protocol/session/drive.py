"""A loop-free driver for the session core: feed inputs, read effects and events."""

from __future__ import annotations

from typing import Any

from protocol.generation import FinishReason, OutputChunk, ToolCallFragment
from protocol.messages import AudioSettings, parse_client_message
from protocol.session import CoreSettings, ServerSession, SessionCore, SessionLimits
from protocol.session.effects import Effect, StartGeneration
from protocol.session.inputs import (
    EngineCounts,
    EngineFinished,
    EngineOutput,
    GenerationStarted,
    Input,
    TransportAttached,
)

WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "current weather of a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


class Driver:
    """One session core, attached to a transport, fed by hand."""

    def __init__(
        self,
        *,
        tools: list[dict[str, Any]] | None = None,
        audio: dict[str, Any] | None = None,
        limits: SessionLimits | None = None,
        **settings: Any,
    ) -> None:
        session = ServerSession("sess", limits or SessionLimits())
        if audio is not None:
            session.audio = AudioSettings.model_validate(audio).model_dump()
        self.core = SessionCore(session, CoreSettings(**settings))
        self.session = session
        self.events: list[dict[str, Any]] = []
        self.feed(TransportAttached())
        if tools is not None:
            self.send(type="session.update", tools=tools)
        self.read()

    def feed(self, event: Input, engine: EngineCounts | None = None) -> list[Effect]:
        """One input; its effects."""
        return self.core.handle(event, 0.0, engine)

    def send(self, engine: EngineCounts | None = None, **message: Any) -> list[Effect]:
        """A client message, validated as the transport validates it."""
        parsed = parse_client_message(message)
        return self.feed(parsed, engine)  # type: ignore[arg-type]

    def read(self) -> list[dict[str, Any]]:
        """Events numbered since the last read, as the client gets them."""
        new = [e.to_message() for e in self.session.number_pending()]
        self.events += new
        return new

    def start(self, text: str = "hello", **fields: Any) -> str:
        """A response.create that the engine took; the response's id."""
        effects = self.send(type="response.create", input=text, **fields)
        (start,) = [e for e in effects if isinstance(e, StartGeneration)]
        self.feed(GenerationStarted(start.response_id, 3))
        return start.response_id

    def output(self, response_id: str, text: str) -> list[Effect]:
        """Engine text."""
        return self.feed(EngineOutput(response_id, OutputChunk(text)))

    def fragment(
        self, response_id: str, call_id: str, arguments: str = "", *, complete: bool = False
    ) -> list[Effect]:
        """A piece of a tool call (``complete``: its arguments are whole)."""
        chunk = OutputChunk(
            "", tool_call=ToolCallFragment(call_id, "get_weather", arguments, complete)
        )
        return self.feed(EngineOutput(response_id, chunk))

    def finish(self, response_id: str, reason: FinishReason) -> list[Effect]:
        """The engine stopped by itself."""
        return self.feed(EngineFinished(response_id, reason), EngineCounts(3, 0))


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events of one type."""
    return [e for e in events if e["type"] == kind]


def kinds(effects: list[Effect]) -> list[str]:
    """Effect class names, in order."""
    return [type(e).__name__ for e in effects]

"""The Realtime session object: what ``session.update`` sets and ``session.created`` shows.

The dialect keeps the session as the client configured it and shows it complete in
every ``session.created`` / ``session.updated`` (the SDK does not validate: a field
left out is an ``AttributeError`` in the application). Audio is PCM16 mono at
24 kHz in both directions, the only format the native sessions and this dialect share.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import ValidationError

from protocol.messages import AudioSettings, ToolSpec, TurnDetection

SAMPLE_RATE: Literal[24000] = 24000
PCM_FORMAT: dict[str, Any] = {"type": "audio/pcm", "rate": SAMPLE_RATE}
DEFAULT_VOICE = "alloy"

Modality = Literal["text", "audio"]


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """A Realtime session's settings, as the client last set them."""

    session_id: str
    model: str
    instructions: str = ""
    output_modalities: tuple[Modality, ...] = ("audio",)
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"
    max_output_tokens: int | Literal["inf"] = "inf"
    turn_detection: TurnDetection | None = field(default_factory=TurnDetection)
    """``None``: turn detection off (the client commits its turns)."""
    voice: str = DEFAULT_VOICE
    transcription_model: str | None = None

    @property
    def audio_output(self) -> bool:
        """Whether responses speak (their text is then the audio's transcript)."""
        return "audio" in self.output_modalities

    def updated(self, **changes: Any) -> SessionConfig:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)


MANUAL_TURNS = TurnDetection(type="manual", create_response=False)
"""Realtime's ``turn_detection: null``: the client commits, and asks for each response."""


def native_audio(config: SessionConfig) -> AudioSettings:
    """The native audio settings of ``config``: its modalities and turn detection."""
    return AudioSettings(
        sample_rate=SAMPLE_RATE,
        output=config.audio_output,
        turn_detection=config.turn_detection or MANUAL_TURNS,
    )


def with_native_settings(config: SessionConfig, settings: Mapping[str, Any]) -> SessionConfig:
    """``config`` with what the native session holds in force.

    ``settings`` is native ``session.updated``'s fields (tools by name) or the same
    read from a session (tools as specs): instructions, tools, and from ``audio`` the
    output modalities and turn detection. What the core does not hold (voice, model,
    transcription model, the session's ``max_output_tokens``) stays as in ``config``.
    """
    changes: dict[str, Any] = {}
    instructions = settings.get("instructions")
    if isinstance(instructions, str):
        changes["instructions"] = instructions
    tools = settings.get("tools")
    if isinstance(tools, list):
        specs = (_tool_spec(config, tool) for tool in tools)
        changes["tools"] = tuple(spec for spec in specs if spec is not None)
    audio = settings.get("audio")
    if isinstance(audio, Mapping):
        changes["output_modalities"] = ("audio",) if audio.get("output", True) else ("text",)
        changes["turn_detection"] = _detection(audio.get("turn_detection"))
    return config.updated(**changes)


def _tool_spec(config: SessionConfig, tool: Any) -> ToolSpec | None:
    """The spec of one tool in force; ``None`` for one that is no tool (a damaged
    stored event: the rest of the settings still hold)."""
    try:
        if isinstance(tool, str):
            # session.updated names the tools: the specs are the ones the client sent.
            known = next((spec for spec in config.tools if spec.name == tool), None)
            return known or ToolSpec(name=tool)
        return ToolSpec.model_validate(tool)
    except ValidationError:
        return None


def _detection(value: Any) -> TurnDetection | None:
    if not isinstance(value, Mapping) or value.get("type") == "manual":
        return None
    try:
        return TurnDetection.model_validate(dict(value))
    except ValidationError:
        return TurnDetection()


def turn_detection_object(detection: TurnDetection | None) -> dict[str, Any] | None:
    """``turn_detection`` in the SDK's ``ServerVad`` shape, every field filled."""
    if detection is None or detection.type == "manual":
        return None
    return {
        "type": "server_vad",
        "threshold": detection.threshold,
        "prefix_padding_ms": detection.prefix_padding_ms,
        "silence_duration_ms": detection.silence_duration_ms,
        "create_response": detection.create_response,
        "interrupt_response": detection.interrupt_response,
        "idle_timeout_ms": None,
    }


def tool_object(tool: ToolSpec) -> dict[str, Any]:
    """A tool in the SDK's ``RealtimeFunctionTool`` shape."""
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }


def session_object(config: SessionConfig) -> dict[str, Any]:
    """The complete ``session`` of ``session.created`` and ``session.updated``."""
    transcription = (
        None
        if config.transcription_model is None
        else {"model": config.transcription_model, "language": None, "prompt": None}
    )
    return {
        "type": "realtime",
        "object": "realtime.session",
        "id": config.session_id,
        "model": config.model,
        "output_modalities": list(config.output_modalities),
        "instructions": config.instructions,
        "tools": [tool_object(tool) for tool in config.tools],
        "tool_choice": config.tool_choice,
        "max_output_tokens": config.max_output_tokens,
        "parallel_tool_calls": True,
        "include": None,
        "prompt": None,
        "reasoning": None,
        "tracing": None,
        "truncation": "auto",
        "expires_at": 0,
        "audio": {
            "input": {
                "format": dict(PCM_FORMAT),
                "transcription": transcription,
                "noise_reduction": None,
                "turn_detection": turn_detection_object(config.turn_detection),
            },
            "output": {"format": dict(PCM_FORMAT), "voice": config.voice, "speed": 1.0},
        },
    }

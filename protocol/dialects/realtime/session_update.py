"""Applying a Realtime ``session.update`` to the dialect's :class:`SessionConfig`."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from protocol.dialects.realtime import client_models as rt
from protocol.dialects.realtime.errors import DialectError
from protocol.dialects.realtime.session_config import (
    SAMPLE_RATE,
    SessionConfig,
    with_native_settings,
)
from protocol.dialects.realtime.state import DialectState
from protocol.messages import ToolSpec, TurnDetection


def session_update(
    config: SessionConfig, patch: rt.Session
) -> tuple[SessionConfig, list[ToolSpec] | None]:
    """The config with ``patch`` applied, and the new tools when the patch set them.

    Raises :class:`DialectError` for a setting this server cannot honour; nothing
    is applied then.
    """
    changes: dict[str, Any] = {}
    if patch.instructions is not None:
        changes["instructions"] = patch.instructions
    if patch.output_modalities is not None:
        changes["output_modalities"] = tuple(patch.output_modalities)
    if patch.max_output_tokens is not None:
        changes["max_output_tokens"] = patch.max_output_tokens
    if patch.model is not None:
        changes["model"] = patch.model
    if patch.tool_choice not in (None, "auto"):
        raise DialectError(
            "unsupported_value", "only tool_choice 'auto' is supported", param="session.tool_choice"
        )
    tools = None if patch.tools is None else session_tools(patch.tools, "session.tools")
    if tools is not None:
        changes["tools"] = tuple(tools)
    if patch.audio is not None:
        changes.update(_audio(config, patch.audio))
    return config.updated(**changes), tools


def settle_update(state: DialectState, in_force: dict[str, Any] | None) -> None:
    """The core answered the oldest pending ``session.update``.

    ``in_force``: its ``session.updated`` (the update is applied, then what the core
    reports in force); ``None``: refused (nothing changes). Either way the requested
    view is rebuilt from the settings in force and the updates still pending.
    """
    if in_force is not None:
        oldest = next((k for k, r in state.pending.items() if r.patch is not None), None)
        request = state.pending.pop(oldest) if oldest is not None else None
        config = state.config
        if request is not None:
            config = session_update(config, request.patch)[0]
        state.config = with_native_settings(config, in_force)
    patches = [r.patch for r in state.pending.values() if r.patch is not None]
    requested = state.config
    for patch in patches:
        requested = session_update(requested, patch)[0]
    state.requested = requested if patches else None


_UNUSED_SESSION_FIELDS = ("include", "prompt", "reasoning", "tracing", "truncation")
_UNUSED_TRANSCRIPTION_FIELDS = ("prompt", "languages", "keywords", "delay")


def kept_patch(patch: rt.Session) -> rt.Session:
    """``patch`` less what :func:`session_update` never reads: a pending update is kept
    until answered (256 of them), and an accepted-but-unused field may be near a frame."""
    audio = patch.audio
    if audio is not None:
        changes: dict[str, Any] = {}
        if audio.output is not None:
            voice = audio.output.voice
            voice = voice[:64] if isinstance(voice, str) else None
            changes["output"] = audio.output.model_copy(update={"voice": voice})
        audio_in = audio.input
        if audio_in is not None:
            # Only fields that were set: session_update reads which ones were.
            inner: dict[str, Any] = {"noise_reduction": None}
            if audio_in.transcription is not None:
                unused = dict.fromkeys(_UNUSED_TRANSCRIPTION_FIELDS)
                inner["transcription"] = audio_in.transcription.model_copy(update=unused)
            changes["input"] = audio_in.model_copy(update=inner)
        audio = audio.model_copy(update=changes)
    return patch.model_copy(update={"audio": audio, **dict.fromkeys(_UNUSED_SESSION_FIELDS)})


def session_tools(tools: list[rt.FunctionTool], param: str) -> list[ToolSpec]:
    """Realtime function tools as native tool specs (``param``: where they were given)."""
    specs = []
    for index, tool in enumerate(tools):
        try:
            specs.append(
                ToolSpec(name=tool.name, description=tool.description, parameters=tool.parameters)
            )
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            raise DialectError(
                "invalid_value",
                f"invalid tool: {where}: {first['msg'].lower()}",
                param=f"{param}.{index}.{where}",
            ) from None
    return specs


def _audio(config: SessionConfig, audio: rt.AudioConfig) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    for side, settings in (("input", audio.input), ("output", audio.output)):
        fmt = settings.format if settings is not None else None
        if fmt is not None and (fmt.type != "audio/pcm" or fmt.rate not in (None, SAMPLE_RATE)):
            raise DialectError(
                "unsupported_value",
                f"only audio/pcm at {SAMPLE_RATE} hz is supported",
                param=f"session.audio.{side}.format",
            )
    if audio.output is not None and isinstance(audio.output.voice, str):
        changes["voice"] = audio.output.voice[:64]
    audio_in = audio.input
    if audio_in is None:
        return changes
    if audio_in.transcription is not None:
        changes["transcription_model"] = audio_in.transcription.model or "whisper"
    elif "transcription" in audio_in.model_fields_set:
        changes["transcription_model"] = None
    if "turn_detection" in audio_in.model_fields_set:
        changes["turn_detection"] = _turn_detection(config.turn_detection, audio_in.turn_detection)
    return changes


def _turn_detection(
    current: TurnDetection | None, vad: rt.ServerVad | None
) -> TurnDetection | None:
    if vad is None:
        return None
    if vad.type != "server_vad":
        raise DialectError(
            "unsupported_value",
            "only server_vad turn detection is supported",
            param="session.audio.input.turn_detection.type",
        )
    base = current or TurnDetection()
    fields = ("threshold", "prefix_padding_ms", "silence_duration_ms")
    values: dict[str, Any] = {name: getattr(base, name) for name in fields}
    values["create_response"] = base.create_response
    values["interrupt_response"] = base.interrupt_response
    for name in (*fields, "create_response", "interrupt_response"):
        given = getattr(vad, name)
        if given is not None:
            values[name] = given
    return TurnDetection(
        type="server_vad", false_interruption_ms=base.false_interruption_ms, **values
    )

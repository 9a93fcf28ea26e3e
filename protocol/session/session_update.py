"""``session.update`` and the overrides of ``response.create``: checked whole, then applied.

An update changes what the next response (or round, or voice turn) sees: the
tools, the instructions, the audio settings (a text session becomes a voice
session), who drives tool rounds. A refused update changes nothing. The
session record stores every one of them (the conversation snapshot), so a
session taken over or recreated elsewhere keeps them.
"""

from __future__ import annotations

from typing import Any

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.messages import ResponseCreate, SessionUpdate
from protocol.session.actions import CoreActions
from protocol.session.effects import ConfigureVoice
from protocol.session.turns import TurnTaking
from protocol.tool_loop import compile_tools


def apply(core: CoreActions, message: SessionUpdate) -> None:
    """Apply an update, or raise (nothing changed) for a refused one."""
    session = core.session
    if (
        message.tools is None
        and message.instructions is None
        and message.audio is None
        and message.tool_rounds is None
    ):
        raise ProtocolViolation(
            ErrorCode.MISSING_FIELD,
            "session.update needs at least one of tools, instructions, audio, tool_rounds",
        )
    audio = message.audio
    turns = core.turns
    if audio is not None and turns is not None and audio.sample_rate != turns.settings.sample_rate:
        raise ProtocolViolation(
            ErrorCode.INVALID_FIELD,
            f"invalid field 'audio.sample_rate': this session's audio is"
            f" {turns.settings.sample_rate} Hz and cannot change",
        )
    if message.tools is not None:
        session.tools.set_tools([t.model_dump() for t in message.tools])  # raises first
    if message.instructions is not None:
        session.conversation.instructions = message.instructions or None
    if audio is not None:
        session.audio = audio.model_dump()
        if turns is None:
            core.turns = TurnTaking(audio, core.settings.max_turn_ms)
        else:
            # Same rate: the kept turn audio and its bound stay as they are. The new
            # detector starts hearing nothing: a speech in progress is found again.
            turns.settings = audio
            turns.speaking = False
        core.emit(ConfigureVoice(audio))
    if message.tool_rounds is not None:
        session.tool_rounds = message.tool_rounds
    session.conversation.version += 1  # all of it is in the conversation snapshot


def in_force(core: CoreActions) -> dict[str, object]:
    """``session.updated``: the settings now in force."""
    session = core.session
    return {
        "tools": list(session.tools.tools),
        "instructions": session.conversation.instructions or "",
        "audio": session.audio,
        "tool_rounds": session.tool_rounds,
    }


def response_overrides(core: CoreActions, message: ResponseCreate) -> dict[str, Any]:
    """A ``response.create``'s overrides (wire form), checked; raises for a refused one."""
    overrides: dict[str, Any] = {}
    if message.instructions is not None:
        overrides["instructions"] = message.instructions
    if message.tools is not None:
        tools = [t.model_dump() for t in message.tools]
        compile_tools(tools)  # refused here, before anything starts
        overrides["tools"] = tools
    if message.audio_output is not None:
        if message.audio_output and core.turns is None:
            raise ProtocolViolation(
                ErrorCode.AUDIO_NOT_ENABLED,
                "audio_output needs a voice session (session.update with audio first)",
            )
        overrides["audio_output"] = message.audio_output
    return overrides

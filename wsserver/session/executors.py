"""How each effect of the session core is carried out: one table, shared by every runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from protocol.session.effects import (
    AbortGeneration,
    ApplyToolResult,
    ArmTimer,
    CancelTimer,
    ClearInputAudio,
    Close,
    CloseToolCalls,
    CommitInputAudio,
    ConfigureVoice,
    EndSession,
    Persist,
    RecordToolCall,
    RecordUsage,
    StartGeneration,
    Wake,
)
from protocol.session.inputs import TimerKind
from wsserver.session.context import RuntimeContext
from wsserver.session.ledger import ToolLedger
from wsserver.session.timers import SessionTimers
from wsserver.session.voice import VoiceInput
from wsserver.transport.base import Transport


class EffectTarget(Protocol):
    """What the executors act on: the session runtime (its parts and its own actions)."""

    @property
    def timers(self) -> SessionTimers:
        """The session's timers (grace, expiry, tool wait)."""
        ...

    @property
    def ledger(self) -> ToolLedger:
        """Runs the session's tool-ledger store calls."""
        ...

    @property
    def voice(self) -> VoiceInput | None:
        """The session's input audio (``None`` without audio)."""
        ...

    @property
    def context(self) -> RuntimeContext:
        """What every runtime of the worker shares (its metrics among them)."""
        ...

    @property
    def transport(self) -> Transport | None:
        """The attached transport, if any."""
        ...

    def cancel_timer(self, kind: TimerKind) -> None:
        """Stop the timer of ``kind`` if one is armed."""
        ...

    def wake(self) -> None:
        """Tell the transport's writer there is something to send."""
        ...

    def persist(self) -> None:
        """Schedule the session's new events and state for the store."""
        ...

    def start_generation(self, effect: StartGeneration) -> None:
        """Submit the engine request."""
        ...

    def abort_generation(self) -> None:
        """Abort the running engine request."""
        ...

    def commit_audio(self, effect: CommitInputAudio) -> None:
        """Commit the input audio buffer as a turn."""
        ...

    def configure_voice(self, effect: ConfigureVoice) -> None:
        """Follow the session's new audio settings (start input audio, or remake its detector)."""
        ...

    def settle(self, *, include_unsent: bool = False) -> None:
        """Write the usage of finished responses to the ledger."""
        ...

    def end(self, *, remove_from_store: bool) -> None:
        """End the session here."""
        ...


def _wake(runtime: EffectTarget, effect: Wake) -> None:
    runtime.wake()


def _persist(runtime: EffectTarget, effect: Persist) -> None:
    runtime.persist()


def _start(runtime: EffectTarget, effect: StartGeneration) -> None:
    runtime.start_generation(effect)


def _abort(runtime: EffectTarget, effect: AbortGeneration) -> None:
    runtime.abort_generation()


def _arm(runtime: EffectTarget, effect: ArmTimer) -> None:
    runtime.timers.arm(effect.kind, effect.delay)


def _cancel(runtime: EffectTarget, effect: CancelTimer) -> None:
    runtime.cancel_timer(effect.kind)


def _ledger(
    runtime: EffectTarget, effect: RecordToolCall | ApplyToolResult | CloseToolCalls
) -> None:
    runtime.ledger.run(effect)
    runtime.context.metrics.tool_calls(*_tool_outcome(effect))


def _tool_outcome(effect: RecordToolCall | ApplyToolResult | CloseToolCalls) -> tuple[str, int]:
    """What the effect says happened to tool calls, and to how many."""
    if isinstance(effect, RecordToolCall):
        return "emitted", 1
    if isinstance(effect, ApplyToolResult):
        return ("result" if effect.error is None else "error_result"), 1
    return "timed_out", len(effect.call_ids)


def _commit(runtime: EffectTarget, effect: CommitInputAudio) -> None:
    runtime.commit_audio(effect)


def _clear(runtime: EffectTarget, effect: ClearInputAudio) -> None:
    if runtime.voice is not None:
        runtime.voice.clear()


def _configure_voice(runtime: EffectTarget, effect: ConfigureVoice) -> None:
    runtime.configure_voice(effect)


def _usage(runtime: EffectTarget, effect: RecordUsage) -> None:
    runtime.settle(include_unsent=effect.include_unsent)


def _close(runtime: EffectTarget, effect: Close) -> None:
    transport = runtime.transport
    if transport is not None:
        # Its departure comes back through runtime.detach, like any close.
        transport.close(effect.code, effect.text)


def _end(runtime: EffectTarget, effect: EndSession) -> None:
    runtime.end(remove_from_store=effect.remove_from_store)


EXECUTORS: dict[type, Callable[[EffectTarget, Any], None]] = {
    Wake: _wake,
    Persist: _persist,
    StartGeneration: _start,
    AbortGeneration: _abort,
    ArmTimer: _arm,
    CancelTimer: _cancel,
    RecordToolCall: _ledger,
    ApplyToolResult: _ledger,
    CloseToolCalls: _ledger,
    CommitInputAudio: _commit,
    ClearInputAudio: _clear,
    ConfigureVoice: _configure_voice,
    RecordUsage: _usage,
    Close: _close,
    EndSession: _end,
}
"""Every effect type and what the runtime does for it."""

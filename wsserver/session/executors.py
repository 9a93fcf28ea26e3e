"""How each effect of the session core is carried out: one table, shared by every runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.session.effects import (
    AbortGeneration,
    ApplyToolResult,
    ArmTimer,
    CancelTimer,
    ClearInputAudio,
    Close,
    CloseToolCalls,
    CommitInputAudio,
    EndSession,
    Persist,
    RecordToolCall,
    RecordUsage,
    StartGeneration,
    Wake,
)

if TYPE_CHECKING:
    from wsserver.session.runtime import SessionRuntime


def _wake(runtime: SessionRuntime, effect: Wake) -> None:
    runtime.wake()


def _persist(runtime: SessionRuntime, effect: Persist) -> None:
    runtime.persist()


def _start(runtime: SessionRuntime, effect: StartGeneration) -> None:
    runtime.start_generation(effect)


def _abort(runtime: SessionRuntime, effect: AbortGeneration) -> None:
    runtime.abort_generation()


def _arm(runtime: SessionRuntime, effect: ArmTimer) -> None:
    runtime.timers.arm(effect.kind, effect.delay)


def _cancel(runtime: SessionRuntime, effect: CancelTimer) -> None:
    runtime.timers.cancel(effect.kind)


def _ledger(
    runtime: SessionRuntime, effect: RecordToolCall | ApplyToolResult | CloseToolCalls
) -> None:
    runtime.ledger.run(effect)


def _commit(runtime: SessionRuntime, effect: CommitInputAudio) -> None:
    runtime.commit_audio(effect)


def _clear(runtime: SessionRuntime, effect: ClearInputAudio) -> None:
    if runtime.voice is not None:
        runtime.voice.clear()


def _usage(runtime: SessionRuntime, effect: RecordUsage) -> None:
    runtime.settle(include_unsent=effect.include_unsent)


def _close(runtime: SessionRuntime, effect: Close) -> None:
    transport = runtime.transport
    if transport is not None:
        # Its departure comes back through runtime.detach, like any close.
        transport.close(effect.code, effect.text)


def _end(runtime: SessionRuntime, effect: EndSession) -> None:
    runtime.end(remove_from_store=effect.remove_from_store)


EXECUTORS: dict[type, Callable[[SessionRuntime, Any], None]] = {
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
    RecordUsage: _usage,
    Close: _close,
    EndSession: _end,
}
"""Every effect type and what the runtime does for it."""

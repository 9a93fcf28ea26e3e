"""A response's engine requests and its end: start, output, finish, stop.

The engine's finish reason maps to the response's status here
(:data:`FINISH_STATUS`); a structured answer is validated before it may end
``completed``. A stopped response aborts its generation first (no more
tokens), then ends with its single ``response.done``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from protocol.codes import CloseCode
from protocol.events import OUTPUT_JSON_DONE, RESPONSE_DONE, Event
from protocol.generation import FinishReason, GenerationRequest, OutputChunk
from protocol.session.actions import CoreActions
from protocol.session.effects import (
    PERSIST,
    WAKE,
    AbortGeneration,
    Close,
    StartGeneration,
)
from protocol.session.inputs import (
    EngineFinished,
    EngineOutput,
    GenerationRefused,
    GenerationStarted,
    InternalFailure,
)
from protocol.session.lifecycle import Phase
from protocol.session.responses import ResponseState, ResponseStatus
from protocol.session.structured_output import final_output
from protocol.session.transcripts import on_transcript

FINISH_STATUS: dict[FinishReason, tuple[ResponseStatus, str | None]] = {
    FinishReason.STOP: (ResponseStatus.COMPLETED, None),
    FinishReason.LENGTH: (ResponseStatus.INCOMPLETE, "max_output_tokens"),
    FinishReason.ERROR: (ResponseStatus.FAILED, "engine_error"),
    FinishReason.ABORTED: (ResponseStatus.CANCELLED, "engine_aborted"),
    FinishReason.TOOL_CALLS: (ResponseStatus.COMPLETED, "tool_calls"),
    FinishReason.UPSTREAM_ERROR: (ResponseStatus.FAILED, "upstream_error"),
    FinishReason.UPSTREAM_TIMEOUT: (ResponseStatus.FAILED, "upstream_timeout"),
}
"""How a generation that stopped by itself ends its response (status, reason)."""


def start(core: CoreActions, response: ResponseState) -> None:
    """Ask for the response's next engine request (the first, or after tool results)."""
    session = core.session
    turns = core.turns
    response.generations += 1
    response.round_start_tokens = response.generated_tokens
    suffix = "" if response.generations == 1 else f"/{response.generations}"
    request = GenerationRequest(
        request_id=f"{session.session_id}/{response.id}{suffix}",
        prompt=session.history(response),
        max_output_tokens=max(1, response.max_output_tokens - response.generated_tokens),
        prefix=response.prefix if response.generations == 1 else "",
        input_audio=turns.take_audio() if turns is not None else b"",
        sample_rate=turns.settings.sample_rate if turns is not None else 16000,
        audio_output=turns is not None
        and (turns.settings.output if response.audio_output is None else response.audio_output),
        tools=tuple(session.tools.tools.values() if response.tools is None else response.tools),
        response_format=response.output_schema,
    )
    core.generating = True
    core.emit(StartGeneration(response.id, request))


def on_started(core: CoreActions, event: GenerationStarted) -> None:
    """The engine took the request: its input tokens are known now."""
    response = core.response(event.response_id)
    if response is None:
        return
    # Counted at once, so a response lost with this worker still reports its input.
    core.session.usage.input_tokens += event.input_tokens
    response.input_tokens += event.input_tokens


def on_refused(core: CoreActions, event: GenerationRefused) -> None:
    """The engine did not take the request: never leave a response open that nothing ends."""
    core.generating = False
    response = core.response(event.response_id)
    if response is None:
        return
    reason = "engine_overloaded" if event.overloaded else "engine_error"
    core.session.end_response(response, ResponseStatus.FAILED, reason=reason)


def on_output(core: CoreActions, event: EngineOutput) -> None:
    """Engine output of a running response."""
    output(core, event.response_id, event.chunk)


def output(core: CoreActions, response_id: str, chunk: OutputChunk) -> None:
    """A chunk of the response's generation: queued for the client (or a tool call's piece)."""
    session = core.session
    response = core.response(response_id)
    assert response is not None, f"output for unknown response {response_id}"
    if chunk.tool_call is not None:
        core.tool_fragment(response, chunk.tool_call, chunk.tokens)
    elif chunk.transcript is not None:
        on_transcript(core, response, chunk.transcript)
    else:
        session.record_output(response, chunk.text, chunk.tokens, chunk.audio, chunk.audio_ms)
    if not core.attached and core.settings.log_shared:
        # Nobody is reading: number it for the shared log now, so a resume on
        # another worker replays it, and a takeover fences this worker at once.
        core.number_for_the_log()
    elif session.outbox.nbytes > session.limits.outbox_max_bytes:
        if core.attached:
            core.emit(Close(CloseCode.SLOW_CONSUMER, "slow consumer: resume"))
        else:
            # Nobody is reading: number the backlog into the bounded replay buffer.
            core.number_for_the_log()
    core.emit(WAKE)


def on_finished(core: CoreActions, event: EngineFinished) -> None:
    """The engine stopped by itself: wait for tools, or end (a structured answer checked)."""
    core.generating = False
    response = core.response(event.response_id)
    if response is None or response.done:
        return
    if event.reason is FinishReason.TOOL_CALLS:
        if core.engine is not None:
            # The round's own count (a usage chunk's) may exceed the chunks seen.
            core.session.count_engine_tokens(response, core.engine.generated_tokens)
        core.tools_called(response)
        core.emit(WAKE)
        return
    if response.output_schema is not None and event.reason is FinishReason.STOP:
        value, problem = final_output(response, core.output_schema)
        if problem is not None:
            fail(core, response, "invalid_output", error={"message": problem})
            return
        core.session.push_event(OUTPUT_JSON_DONE, {"response_id": response.id, "value": value})
    status, why = FINISH_STATUS[event.reason]
    end(core, response, status, reason=why)


def fail(core: CoreActions, response: ResponseState, reason: str, *, error: dict[str, Any]) -> None:
    """End a response ``failed`` (engine aborted first), saying why in its done."""
    stop(core, response, ResponseStatus.FAILED, reason=reason, details={"error": error})


def stop(
    core: CoreActions,
    response: ResponseState,
    status: ResponseStatus,
    *,
    reason: str,
    rendered_chars: int | None = None,
    played_ms: int | None = None,
    details: dict[str, object] | None = None,
) -> None:
    """Abort the engine first (no more tokens), then end the response."""
    if core.generating:
        core.emit(AbortGeneration())
    end(
        core,
        response,
        status,
        reason=reason,
        rendered_chars=rendered_chars,
        played_ms=played_ms,
        details=details,
    )


def end(
    core: CoreActions,
    response: ResponseState,
    status: ResponseStatus,
    *,
    reason: str | None,
    rendered_chars: int | None = None,
    played_ms: int | None = None,
    details: dict[str, object] | None = None,
) -> None:
    """End the response with its single done; then what follows an end."""
    session = core.session
    counts = core.engine if session.active is response else None
    session.end_response(
        response,
        status,
        reason=reason,
        # A tool loop's later rounds count on top of the earlier ones (on_started).
        input_tokens=(
            counts.input_tokens if counts is not None and response.generations <= 1 else None
        ),
        generated_tokens=counts.generated_tokens if counts is not None else None,
        rendered_chars=rendered_chars,
        played_ms=played_ms,
        details=details,
    )
    if counts is not None:
        core.generating = False
    core.response_ended()
    core.emit(WAKE)


def on_internal_failure(core: CoreActions, event: InternalFailure) -> None:
    """Whatever failed while a response ran or ended, it still ends, once: ``failed``.

    Without this the engine's loop would drop the generation and the response
    would stay open: no ``response.done``, every later ``response.create``
    refused as ``response_in_progress``.
    """
    response = core.response(event.response_id)
    if response is None:
        return
    session = core.session
    if not response.done:
        # The last resort below must run even if the normal end raises again.
        with contextlib.suppress(Exception):
            stop(core, response, ResponseStatus.FAILED, reason="internal_error")
    if session.active is response:
        # Ending it raised before its done was queued: end it with a minimal done.
        _abandon(core, response)
    core.emit(WAKE)
    core.emit(PERSIST)


def _abandon(core: CoreActions, response: ResponseState) -> None:
    session = core.session
    session.active = None
    session.last_response = response
    response.status = ResponseStatus.FAILED
    response.reason = "internal_error"
    response.phase = Phase.ENDED  # past the table on purpose: the normal end raised
    fields = {"response_id": response.id, "status": "failed", "reason": "internal_error"}
    session.outbox.push(Event(RESPONSE_DONE, fields, response_id=response.id))
    if core.generating:
        core.generating = False
        core.emit(AbortGeneration())

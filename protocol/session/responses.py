"""Per-response state and the session's bounds: the values the session core is built on."""

from __future__ import annotations

import bisect
import enum
from dataclasses import dataclass, field
from typing import Any

from protocol.json_schema import CompiledSchema
from protocol.partial_json import PartialJson
from protocol.session.lifecycle import Phase, Trigger, advance
from protocol.text_buffer import TextBuffer
from protocol.tool_loop import compile_tools
from protocol.usage import Usage

_ENDED = Phase.ENDED  # read per token: a module global is cheaper than the enum's attribute


class ResponseStatus(enum.StrEnum):
    """How a response ended (the ``status`` of ``response.done``)."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    FAILED = "failed"
    INCOMPLETE = "incomplete"


CONTINUABLE = frozenset({"failed", "incomplete", "interrupted"})
"""Statuses a ``response.continue`` may pick up from."""


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Bounds of one session; sent to the client in ``session.ready``."""

    replay_max_events: int = 4096
    replay_max_bytes: int = 1 << 20
    outbox_max_bytes: int = 1 << 20
    max_output_tokens: int = 4096
    max_input_chars: int = 100_000
    history_max_chars: int = 1_000_000
    """The conversation's text bound: past it the oldest turns are forgotten."""
    tool_timeout_ms: int = 0
    """How long an emitted tool call waits for its result (0: the worker's default)."""

    def to_dict(self) -> dict[str, int]:
        """Wire form."""
        return {
            "tool_timeout_ms": self.tool_timeout_ms,
            "replay_max_events": self.replay_max_events,
            "replay_max_bytes": self.replay_max_bytes,
            "outbox_max_bytes": self.outbox_max_bytes,
            "max_output_tokens": self.max_output_tokens,
            "max_input_chars": self.max_input_chars,
            "history_max_chars": self.history_max_chars,
        }


@dataclass(slots=True)
class ResponseState:
    """One response of a session, from creation to ``response.done``."""

    id: str
    max_output_tokens: int
    status: ResponseStatus | None = None
    """How it ended; ``None`` until it ends."""
    reason: str | None = None
    input_tokens: int = 0
    generated_tokens: int = 0
    generated: TextBuffer = field(default_factory=TextBuffer)
    """Every character of text the engine produced for this response (one copy)."""
    delivered_tokens: int = 0
    delivered_chars: int = 0
    """How much of that text left the outbox (sent text is always a prefix of it)."""
    acknowledged_tokens: int = 0
    """Delivered tokens the client acked."""
    usage_recorded: bool = False
    """Set by the runtime once the usage went to the ledger (recorded once)."""
    prefix: str = ""
    """Text of the response this one continues (``response.continue``), if any."""
    continues: str | None = None
    history_text: str | None = None
    """The assistant turn this response left in the conversation."""
    history_index: int | None = None
    """Where that turn is in the conversation (a late playback report may shorten it)."""
    audio_ends_ms: list[float] = field(default_factory=list)
    """Audio timeline: where each chunk of generated audio ends, in ms..."""
    audio_ends_chars: list[int] = field(default_factory=list)
    """...and how many characters of generated text were out when it ended."""
    audio_sent_ms: float = 0.0
    """Audio that left the outbox for the client."""
    played_ms: int | None = None
    """The client's latest playback report, clamped to the audio sent."""
    rendered_chars: int | None = None
    """Characters the client said it showed when it interrupted (a cap on the history)."""
    generations: int = 0
    """Engine requests this response made (a tool loop makes one per round)."""
    round_start_tokens: int = 0
    """``generated_tokens`` when the current engine request started: the engine's own
    count for that request is compared with what came since, not with earlier rounds."""
    segment_start: int = 0
    """Characters of text before the current round (earlier rounds are in the history)."""
    phase: Phase = Phase.GENERATING
    """Where it is in its life (:mod:`protocol.session.lifecycle`); moved only by ``advance``."""
    output_json: PartialJson | None = None
    """Parses the text of a response that asked for structured output."""
    output_schema: dict[str, Any] | None = None
    """The JSON Schema that output must match."""
    tool_retries: int = 0
    """Times the engine was asked to write an invalid call again."""
    output_json_shown: Any = None
    """The provisional value last sent (``response.output_json.delta``)."""
    instructions: str | None = None
    """This response's own instructions (``response.create``); ``None``: the session's."""
    tools: list[dict[str, Any]] | None = None
    """This response's own tools, for all its rounds; ``None``: the session's."""
    tool_validators: dict[str, CompiledSchema] | None = None
    """Those tools' compiled parameters (``None`` with the session's tools)."""
    audio_output: bool | None = None
    """Speak this answer or not; ``None``: the session's ``audio.output``."""

    def overrides(self) -> dict[str, Any]:
        """The ``response.create`` overrides in force (wire form; stored with the response)."""
        out: dict[str, Any] = {}
        if self.instructions is not None:
            out["instructions"] = self.instructions
        if self.tools is not None:
            out["tools"] = self.tools
        if self.audio_output is not None:
            out["audio_output"] = self.audio_output
        return out

    def set_overrides(self, overrides: dict[str, Any]) -> None:
        """Take the overrides of :meth:`overrides` (a continued or restored response).

        Raises :class:`protocol.errors.ProtocolViolation` for tools that do not compile.
        """
        instructions = overrides.get("instructions")
        self.instructions = None if instructions is None else str(instructions)
        tools = overrides.get("tools")
        if tools is not None:
            self.tool_validators = compile_tools(list(tools))
            self.tools = list(tools)
        audio_output = overrides.get("audio_output")
        self.audio_output = None if audio_output is None else bool(audio_output)

    @property
    def has_audio(self) -> bool:
        """Whether the response produced audio."""
        return bool(self.audio_ends_ms)

    def heard_chars(self, played_ms: float) -> int:
        """Characters whose audio was played in full within ``played_ms``."""
        index = bisect.bisect_right(self.audio_ends_ms, played_ms)
        return self.audio_ends_chars[index - 1] if index else 0

    @property
    def done(self) -> bool:
        """Whether the response has ended (its ``response.done`` is queued or sent)."""
        return self.phase is _ENDED

    def advance(self, trigger: Trigger) -> None:
        """Move to the phase the lifecycle table gives (raises for a trigger it refuses)."""
        self.phase = advance(self.phase, trigger)

    def usage(self) -> Usage:
        """Usage of this response so far."""
        return Usage(
            self.input_tokens,
            self.generated_tokens,
            self.delivered_tokens,
            self.acknowledged_tokens,
        )

    @property
    def generated_chars(self) -> int:
        """Characters of text the engine produced for this response."""
        return self.generated.chars

    def delivered_text(self) -> str:
        """The text that has left the outbox for the client."""
        return self.generated.text()[: self.delivered_chars]

    def generated_text(self) -> str:
        """All text the engine produced for this response."""
        return self.generated.text()

    def restore_text(self, text: str) -> None:
        """Set the text of a response read back from a store (all of it delivered)."""
        self.generated = TextBuffer(text)
        self.delivered_chars = len(text)

"""What the pipeline counts, for the engine's stats (monitoring, and tests of aborts)."""

from __future__ import annotations


class PipelineCounters:
    """Counts of one pipeline engine's work since it was made."""

    __slots__ = (
        "failures",
        "llm_aborted",
        "syntheses",
        "syntheses_aborted",
        "transcriptions",
        "transcriptions_aborted",
    )

    def __init__(self) -> None:
        self.transcriptions = 0
        self.transcriptions_aborted = 0
        """Aborted while the STT ran."""
        self.syntheses = 0
        """Clauses given to the TTS."""
        self.syntheses_aborted = 0
        """Aborted while the TTS ran."""
        self.llm_aborted = 0
        """LLM generations aborted while they ran (an abort, or a failing stage)."""
        self.failures = 0

    def as_stats(self) -> dict[str, int]:
        """The counters under their names in ``Engine.stats()``."""
        return {
            "transcriptions": self.transcriptions,
            "transcriptions_aborted": self.transcriptions_aborted,
            "syntheses": self.syntheses,
            "syntheses_aborted": self.syntheses_aborted,
            "llm_aborted": self.llm_aborted,
            "pipeline_failures": self.failures,
        }

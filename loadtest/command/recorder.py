"""What one run against one server observed: latency samples, counters and a timeline."""

from __future__ import annotations

import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

SAMPLE_KEYS = (
    "ttft_ms",
    "inter_token_ms",
    "interrupt_done_ms",
    "interrupt_last_audio_ms",
    "speech_end_first_audio_ms",
    "reconnect_ready_ms",
    "ping_ms",
)
"""Latency samples a scenario may take (each a list of milliseconds)."""

MAX_SAMPLES = 100_000
"""Samples kept per key: past it a uniform reservoir (the count and max stay exact), so a
long run or a server spewing deltas keeps memory and the report bounded."""


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile ``q`` in [0, 100]; ``None`` without samples."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(slots=True)
class Recorder:
    """Shared by every session of one run; single-threaded (one event loop)."""

    started: float = field(default_factory=time.monotonic)
    samples: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    counters: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    close_codes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    active: int = 0
    events: int = 0
    tokens: int = 0
    timeline: list[dict[str, float]] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)
    seen: Counter[str] = field(default_factory=Counter)
    """Samples taken per key (the reservoir keeps at most :data:`MAX_SAMPLES`)."""
    peaks: dict[str, float] = field(default_factory=dict)
    _reservoir_rng: random.Random = field(default_factory=lambda: random.Random(0))
    _last_events: int = 0
    _last_tokens: int = 0
    _last_at: float = 0.0

    def elapsed(self) -> float:
        """Seconds since the run began."""
        return time.monotonic() - self.started

    def sample(self, key: str, seconds: float) -> None:
        """One latency sample, given in seconds, kept in ms (a reservoir past the bound)."""
        ms = seconds * 1000
        self.seen[key] += 1
        if ms > self.peaks.get(key, -1.0):
            self.peaks[key] = ms
        kept = self.samples[key]
        if len(kept) < MAX_SAMPLES:
            kept.append(ms)
            return
        slot = self._reservoir_rng.randrange(self.seen[key])  # Algorithm R: uniform
        if slot < MAX_SAMPLES:
            kept[slot] = ms

    def tick(self, rss_bytes: int | None) -> dict[str, float]:
        """One timeline point (events/s and tokens/s since the last one, sessions active)."""
        now = self.elapsed()
        span = max(now - self._last_at, 1e-6)
        point = {
            "t": round(now, 3),
            "sessions": float(self.active),
            "events_per_s": (self.events - self._last_events) / span,
            "tokens_per_s": (self.tokens - self._last_tokens) / span,
        }
        if rss_bytes is not None:
            point["rss_mib"] = rss_bytes / 2**20
        self._last_events, self._last_tokens, self._last_at = self.events, self.tokens, now
        self.timeline.append(point)
        return point

    def summary(self) -> dict[str, Any]:
        """Counts and percentiles (the raw samples are kept too, for the plots)."""
        latency = {
            key: {
                "count": self.seen[key] or len(values),
                "p50": percentile(values, 50),
                "p99": percentile(values, 99),
                "max": self.peaks.get(key, max(values) if values else None),
            }
            for key, values in sorted(self.samples.items())
        }
        return {
            "latency_ms": latency,
            "samples_ms": {k: [round(v, 3) for v in vs] for k, vs in sorted(self.samples.items())},
            "counters": dict(self.counters),
            "statuses": dict(self.statuses),
            "close_codes": dict(self.close_codes),
            "errors": dict(self.errors),
            "events": self.events,
            "tokens": self.tokens,
            "timeline": self.timeline,
        }

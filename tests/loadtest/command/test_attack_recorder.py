"""A long or hostile run (a server spewing deltas) keeps a bounded number of samples.

Every inter-token gap was kept: 20,000 sessions at 50 tokens/s for an hour is 3.6
billion floats in memory and in the JSON report. Past the bound a uniform reservoir
keeps the distribution; the count and the maximum stay exact.
"""

from __future__ import annotations

import random

from loadtest.command.recorder import MAX_SAMPLES, Recorder


def test_samples_are_bounded_and_count_and_max_stay_exact() -> None:
    rec = Recorder()
    rng = random.Random(3)
    n = MAX_SAMPLES * 3
    for _ in range(n):
        rec.sample("inter_token_ms", rng.random())  # seconds, uniform in [0, 1)
    rec.sample("inter_token_ms", 5.0)  # one outlier, last
    summary = rec.summary()
    kept = summary["samples_ms"]["inter_token_ms"]
    latency = summary["latency_ms"]["inter_token_ms"]
    assert len(kept) <= MAX_SAMPLES
    assert latency["count"] == n + 1
    assert latency["max"] == 5000.0
    # The reservoir is uniform: its median is the stream's (500 ms) to within a few percent.
    assert 470 < latency["p50"] < 530, latency

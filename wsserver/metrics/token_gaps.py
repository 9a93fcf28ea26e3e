"""The per-token histogram, kept without locks: plain counts read at scrape time.

``prometheus_client``'s ``Histogram.observe`` takes a lock per bucket and per sum
(~1.8 us a call here); the token gap is observed once per token, on the event loop's
one thread, so a list of counts indexed by ``bisect`` does the same for a fraction of
that, and :meth:`collect` turns it into the standard histogram series at each scrape.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence

from prometheus_client.core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector


class LoopHistogram(Collector):
    """A histogram updated from one thread only (the worker's event loop)."""

    def __init__(self, name: str, documentation: str, buckets: Sequence[float]) -> None:
        self.name = name
        self.documentation = documentation
        self.bounds = tuple(buckets)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        """Count one value (``le`` buckets: a value equal to a bound goes in it)."""
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.sum += amount

    def collect(self) -> Iterable[Metric]:
        """The cumulative buckets, sum and count (called by the registry per scrape)."""
        running = 0
        buckets: list[tuple[str, float]] = []
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            buckets.append((bound, running))
        yield HistogramMetricFamily(
            self.name, self.documentation, buckets=buckets, sum_value=self.sum
        )

    def describe(self) -> Iterable[Metric]:
        """The family's name, so a second registration of it is refused."""
        yield HistogramMetricFamily(self.name, self.documentation)

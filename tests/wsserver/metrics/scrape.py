"""Scrape a server's ``/metrics`` and read its samples (the library's own parser)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[str, dict[frozenset[tuple[str, str]], float]]
"""Sample name -> its label set -> value."""


def get(url: str, key: str | None = None) -> tuple[int, str, str]:
    """(status, content type, body) of one GET."""
    request = urllib.request.Request(url)
    if key is not None:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and labels."""
    samples: Samples = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name][frozenset(sample.labels.items())] = sample.value
    return samples


def scrape(base: str, key: str | None = None) -> Samples:
    """``GET base/metrics``, which must answer 200 in the text format."""
    status, content_type, body = get(base + "/metrics", key)
    assert status == 200, (status, body)
    assert content_type.startswith("text/plain"), content_type
    return parse(body)


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels`` (0 if none)."""
    wanted = set(labels.items())
    return sum(v for ls, v in samples.get(name, {}).items() if wanted <= ls)


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    """How much ``name`` (with ``labels``) moved between two scrapes."""
    return value(after, name, **labels) - value(before, name, **labels)

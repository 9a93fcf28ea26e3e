"""Just enough PromQL reading for the dashboard checks: the metric names an expression
selects, the labels it matches or groups by, and anything else that looks like a name."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

METRIC_PREFIX = "wsserver_"
VOCABULARY = {
    # The functions, aggregations and keywords the dashboard uses; any other bare name in
    # an expression would be a metric the checks do not know.
    "sum",
    "rate",
    "increase",
    "histogram_quantile",
    "by",
    "without",
    "label_values",
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_RANGE = re.compile(r"\[[^\]]*\]")
_SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}")
_MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")')
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")


@dataclass
class Reading:
    """What one expression refers to."""

    metrics: set[str] = field(default_factory=set)
    """Sample names selected (``wsserver_ttft_seconds_bucket``)."""
    labels: set[str] = field(default_factory=set)
    """Labels matched in a selector or named in ``by``/``without``."""
    matchers: list[tuple[str, str, str]] = field(default_factory=list)
    """(label, operator, value) of every selector matcher."""
    unknown: set[str] = field(default_factory=set)
    """Bare names that are neither a wsserver metric nor in the vocabulary."""


def read(expr: str) -> Reading:
    """Read ``expr`` (Grafana variables such as ``$pod`` may appear in strings and ranges)."""
    reading = Reading()
    # A Grafana variable's query: label_values(SELECTOR, LABEL).
    variable = _LABEL_VALUES.match(expr)
    if variable:
        reading = read(variable[1])
        reading.labels.add(variable[2])
        return reading
    for _name, body in _SELECTOR.findall(expr):
        for label, operator, value in _MATCHER.findall(body):
            reading.labels.add(label)
            reading.matchers.append((label, operator, value[1:-1]))
    for group in _GROUPING.findall(expr):
        reading.labels |= {label.strip() for label in group.split(",") if label.strip()}
    rest = _GROUPING.sub(" by ", _RANGE.sub(" ", _SELECTOR.sub(r"\1", _STRING.sub(" ", expr))))
    rest = _NUMBER.sub(" ", rest)
    for name in _NAME.findall(rest):
        if name.startswith(METRIC_PREFIX):
            reading.metrics.add(name)
        elif name not in VOCABULARY:
            reading.unknown.add(name)
    return reading

"""The dashboard's PromQL read by a real PromQL parser (``promql-parser``): a query that
does not parse fails, and the metric names, matchers and grouping labels come from its
syntax tree, not from a pattern over the text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import promql_parser

METRIC_PREFIX = "wsserver_"
RATE_INTERVAL = "1m"
"""What Grafana's ``$__rate_interval`` stands for when a query is parsed here."""
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")
_OPERATORS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}


@dataclass
class Reading:
    """What one expression refers to."""

    metrics: set[str] = field(default_factory=set)
    """Sample names selected (``wsserver_ttft_seconds_bucket``)."""
    labels: set[str] = field(default_factory=set)
    """Labels matched in a selector or named in ``by``/``without``/``on``/``ignoring``."""
    matchers: list[tuple[str, str, str]] = field(default_factory=list)
    """(label, operator, value) of every selector matcher."""
    unknown: set[str] = field(default_factory=set)
    """Metric names selected that are not wsserver's."""


def read(expr: str) -> Reading:
    """Read ``expr``: a panel's PromQL, or a variable's ``label_values(SELECTOR, LABEL)``
    (Grafana's, not PromQL). Raises ``ValueError`` when it does not parse."""
    variable = _LABEL_VALUES.match(expr)
    if variable:
        reading = read(variable[1])
        reading.labels.add(variable[2])
        return reading
    reading = Reading()
    _walk(promql_parser.parse(expr.replace("$__rate_interval", RATE_INTERVAL)), reading)
    return reading


def _walk(node: Any, reading: Reading) -> None:
    """Collect what ``node`` and everything under it select."""
    kind = type(node).__name__
    if kind == "VectorSelector":
        _selector(node, reading)
    elif kind == "MatrixSelector":
        _selector(node.vector_selector, reading)
    elif kind == "Call":
        for argument in node.args:
            _walk(argument, reading)
    elif kind == "AggregateExpr":
        if node.modifier is not None:
            reading.labels |= set(node.modifier.labels)
        _walk(node.expr, reading)
        if node.param is not None:
            _walk(node.param, reading)
    elif kind == "BinaryExpr":
        matching = node.modifier.matching if node.modifier is not None else None
        if matching is not None:
            reading.labels |= set(matching.labels)
        _walk(node.lhs, reading)
        _walk(node.rhs, reading)
    elif kind in ("ParenExpr", "UnaryExpr", "SubqueryExpr"):
        _walk(node.expr, reading)
    else:
        assert kind in ("NumberLiteral", "StringLiteral"), f"unexpected PromQL node {kind}"


def _selector(node: Any, reading: Reading) -> None:
    name = node.name or ""
    (reading.metrics if name.startswith(METRIC_PREFIX) else reading.unknown).add(name)
    for matcher in node.matchers.matchers:
        if matcher.name == "__name__":
            reading.unknown.add(matcher.value)
            continue
        reading.labels.add(matcher.name)
        operator = _OPERATORS[str(matcher.op).rpartition(".")[2]]
        reading.matchers.append((matcher.name, operator, matcher.value))

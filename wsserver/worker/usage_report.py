"""Usage reports: the ledger of a session, per response and in total."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wsserver.store.base import ResponseUsage, ledger_totals


def usage_report(session_id: str, entries: Sequence[ResponseUsage]) -> dict[str, Any]:
    """JSON-ready report: every response's usage, waste, and the session totals."""
    totals = ledger_totals(entries)
    return {
        "session_id": session_id,
        "responses": [
            {
                "response_id": e.response_id,
                "status": e.status,
                "reason": e.reason,
                **e.usage.to_dict(),
                "output_tokens_wasted": e.usage.output_tokens_wasted,
            }
            for e in entries
        ],
        "totals": {**totals.to_dict(), "output_tokens_wasted": totals.output_tokens_wasted},
    }


def format_usage(report: dict[str, Any]) -> str:
    """A table for the terminal."""
    header = (
        f"{'response':<12} {'status':<12} {'reason':<18} {'input':>7} "
        f"{'generated':>10} {'delivered':>10} {'acked':>7} {'wasted':>7}"
    )
    lines = [f"session {report['session_id']}", header, "-" * len(header)]
    rows = [
        *report["responses"],
        {"response_id": "total", "status": "", "reason": None, **report["totals"]},
    ]
    for row in rows:
        lines.append(
            f"{row['response_id']:<12} {row['status']:<12} {(row['reason'] or ''):<18} "
            f"{row['input_tokens']:>7} {row['output_tokens_generated']:>10} "
            f"{row['output_tokens_delivered']:>10} {row.get('output_tokens_acknowledged', 0):>7} "
            f"{row['output_tokens_wasted']:>7}"
        )
    return "\n".join(lines)

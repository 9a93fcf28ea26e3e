"""The fuzz script's own judgement: field coverage, log scanning, goals (pure, no sockets)."""

from __future__ import annotations

from typing import Any

from loadtest.fuzz.fields import BASE_MESSAGES, uncovered_fields
from loadtest.fuzz.report import goals, scan_log
from protocol.messages import CLIENT_MESSAGE_TYPES, parse_client_message


def test_every_field_of_every_message_type_is_fuzzed() -> None:
    assert set(BASE_MESSAGES) == CLIENT_MESSAGE_TYPES
    assert uncovered_fields() == []


def test_the_base_messages_are_valid() -> None:
    # Each case breaks one field of a valid message, so the rest must be valid.
    for message in BASE_MESSAGES.values():
        parse_client_message(message)


def test_scan_log_counts_tracebacks_by_their_exception() -> None:
    log = "\n".join(
        [
            "2026-01-01 00:00:00,000 ERROR wsserver.transport.websocket: failed to handle ping 12",
            "Traceback (most recent call last):",
            '  File "x.py", line 1, in f',
            "    raise TypeError('a')",
            "TypeError: a",
            "2026-01-01 00:00:01,000 ERROR wsserver.transport.websocket: failed to handle ping 13",
            "Traceback (most recent call last):",
            '  File "x.py", line 1, in f',
            "TypeError: a",
            "2026-01-01 00:00:02,000 WARNING wsserver.worker.server: slow",
        ]
    )
    scanned = scan_log(log)
    assert scanned["tracebacks"] == 2
    assert scanned["traceback_exceptions"] == {"TypeError: a": 2}
    assert scanned["log_lines_by_level"] == {"CRITICAL": 0, "ERROR": 2, "WARNING": 1}
    assert (
        scanned["log_messages"]["ERROR wsserver.transport.websocket: failed to handle ping N"] == 2
    )


def _clean_results() -> dict[str, Any]:
    zero = {
        "undocumented_closes": 0,
        "canary_hits": 0,
        "responses_unterminated": 0,
        "responses_done_twice": 0,
        "silent_after": 0,
        "expected_close_missing": 0,
    }
    return {
        "totals": zero,
        "healthy": {
            "answers_started": 10,
            "answers_completed": 10,
            "sessions": 2,
            "sessions_opened": 2,
            "reconnects": 0,
        },
        "worker": {"crashed": False, "rss_ratio": 1.05, "log": {"tracebacks": 0}},
        "health": {"failures": 0},
        "trap": {"requests": 0},
        "store_writer": {"longest_pause_s": 0.5},
        "shared_store": True,
    }


def test_a_clean_run_meets_every_goal() -> None:
    assert all(goals(_clean_results()).values())


def test_each_defect_fails_its_goal() -> None:
    broken = {
        "no traceback": ("worker", "log", {"tracebacks": 1}),
        "RSS back within 10%": ("worker", "rss_ratio", 1.2),
        "nothing fetched or read": ("trap", "requests", 1),
        "no undocumented close": ("totals", "undocumented_closes", 1),
        "store writer keeps writing": ("store_writer", "longest_pause_s", 30.0),
        "every healthy answer complete": ("healthy", "answers_completed", 9),
    }
    for goal, (part, key, value) in broken.items():
        results = _clean_results()
        results[part][key] = value
        met = goals(results)
        assert met[goal] is False, goal
        assert all(v for name, v in met.items() if name != goal), goal

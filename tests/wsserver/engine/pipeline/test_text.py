"""Text from outside the pipeline is made valid Unicode before it goes anywhere."""

from __future__ import annotations

import pytest

from wsserver.engine.pipeline.text import valid_text


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("hello \ud800 world", "hello \ufffd world"),  # a lone high surrogate
        ("\udfff\ud800", "\ufffd\ufffd"),  # a low one, and a pair in the wrong order
        ("\ud83d\ude00 ok", "\U0001f600 ok"),  # a pair written as two escapes: joined
        ("a\x00b\x1bc\x7f\x85d", "abcd"),  # C0, DEL and C1 controls are removed
        ("one\ttwo\nthree\r\n", "one\ttwo\nthree\r\n"),  # whitespace stays
        ("café 東京", "café 東京"),  # ordinary text is untouched
    ],
)
def test_text_is_valid_unicode_without_controls(given: str, expected: str) -> None:
    cleaned = valid_text(given)
    assert cleaned == expected
    cleaned.encode("utf-8")  # raises on a surrogate

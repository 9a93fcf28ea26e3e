"""The partial-JSON benchmark's document and its cut (pure, no timing)."""

from __future__ import annotations

import json

from loadtest.partial_json.__main__ import agreement, stream_jiter, stream_ours
from loadtest.partial_json.document import build_document, cut_into_deltas


def test_the_document_is_json_of_at_least_the_size_asked() -> None:
    text = build_document(5000, seed=3)
    assert len(text) >= 5000
    assert len(json.loads(text)["items"]) > 1
    assert build_document(5000, seed=3) == text


def test_the_document_takes_every_string_path() -> None:
    text = build_document(3000, seed=1)
    # escapes, a control character, non-ASCII and a character outside the BMP
    for piece in ('\\"', "\\\\", "\\t", "\u00e9", "\U0001f600"):
        assert piece in text


def test_the_deltas_are_the_document_in_order_within_their_bounds() -> None:
    text = build_document(2000, seed=2)
    deltas = cut_into_deltas(text, 4, 16, seed=2)
    assert "".join(deltas) == text
    assert all(4 <= len(d) <= 16 for d in deltas[:-1])
    assert 1 <= len(deltas[-1]) <= 16


def test_both_ways_time_every_delta_and_agree_on_the_whole() -> None:
    text = build_document(1500, seed=4)
    deltas = cut_into_deltas(text, 4, 16, seed=4)
    assert len(stream_ours(deltas, read=True)) == len(deltas)
    assert len(stream_jiter(deltas)) == len(deltas)
    seen = agreement(deltas)
    assert 1 < seen["compared"] <= len(deltas)
    assert 0 <= seen["differed"] < seen["compared"]

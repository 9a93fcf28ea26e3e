"""valid_text: lone surrogates replaced, everything else untouched."""

from __future__ import annotations

import json

from protocol.unicode_text import REPLACEMENT, valid_text


def test_plain_and_astral_text_is_returned_as_it_is() -> None:
    for text in ("hello", "héllo wörld", "日本語", json.loads('"\\ud83d\\ude00"')):
        assert valid_text(text) is text


def test_lone_surrogates_become_replacement_characters() -> None:
    text = json.loads('"a \\ud800 b \\udfff c"')
    cleaned = valid_text(text)
    assert cleaned == f"a {REPLACEMENT} b {REPLACEMENT} c"
    cleaned.encode("utf-8")


def test_two_halves_of_a_pair_that_met_make_their_character() -> None:
    high, low = json.loads('"\\ud83d"'), json.loads('"\\ude00"')
    assert valid_text(high + low) == "\U0001f600"

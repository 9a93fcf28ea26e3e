"""Cutting streamed LLM text into clauses (pure)."""

from __future__ import annotations

import pytest

from wsserver.engine.pipeline.clauses import ClauseLimits, ClauseSplitter


def split(text: str, *, step: int = 1, limits: ClauseLimits | None = None) -> list[str]:
    """Feed ``text`` ``step`` characters at a time (as tokens stream), then flush."""
    splitter = ClauseSplitter(limits)
    clauses: list[str] = []
    for start in range(0, len(text), step):
        clauses += splitter.feed(text[start : start + step])
    rest = splitter.flush()
    if rest:
        clauses.append(rest)
    assert "".join(clauses) == text, "the clauses must join back to the text exactly"
    return clauses


@pytest.mark.parametrize("step", [1, 3, 1000])
def test_sentences_end_clauses_whatever_the_token_boundaries(step: int) -> None:
    assert split("Hello there. How are you? I'm fine! Thanks.", step=step) == [
        "Hello there.",
        " How are you?",
        " I'm fine!",
        " Thanks.",
    ]


def test_a_sentence_end_waits_for_what_follows() -> None:
    splitter = ClauseSplitter()
    assert splitter.feed("It costs 3.") == []
    # "3.5" is a number, not a sentence end: only the next character tells.
    assert splitter.feed("5 euros. And") == ["It costs 3.5 euros."]
    assert splitter.pending == " And"


def test_abbreviations_and_initials_do_not_end_sentences() -> None:
    text = "Dr. Smith met Mrs. Jones, e.g. at St. Paul's in the U.S. with J. R. Tolkien. Then left."
    assert split(text) == [
        "Dr. Smith met Mrs. Jones,",
        " e.g. at St. Paul's in the U.S. with J. R. Tolkien.",
        " Then left.",
    ]


def test_numbers_keep_their_commas_and_points() -> None:
    assert split("We sold 1,000,000 units at 2.50 each in 2024. Good.") == [
        "We sold 1,000,000 units at 2.50 each in 2024.",
        " Good.",
    ]


def test_commas_end_a_clause_only_once_it_is_long_enough() -> None:
    assert split("Yes, sure, I can do that for you, and more; just ask: anything.") == [
        "Yes, sure, I can do that for you,",
        " and more; just ask:",
        " anything.",
    ]


def test_closing_quotes_and_brackets_stay_with_their_sentence() -> None:
    assert split('He said "stop." Then (quietly!) she left.') == [
        'He said "stop."',
        " Then (quietly!)",
        " she left.",
    ]


def test_line_breaks_end_clauses() -> None:
    assert split("First item\nSecond item\n\nThird") == [
        "First item\n",
        "Second item\n",
        "\nThird",
    ]


def test_a_long_stretch_without_punctuation_is_cut_at_a_space_before_the_bound() -> None:
    limits = ClauseLimits(min_chars=5, max_chars=40, first_max_chars=40)
    text = " ".join(f"word{i}" for i in range(40))
    clauses = split(text, limits=limits)
    assert len(clauses) > 5
    for clause in clauses:
        assert len(clause) <= 40
    # Cut between words, never inside one.
    for clause in clauses[:-1]:
        assert clause.endswith(" ")


def test_the_first_clause_is_cut_sooner_so_the_answer_starts_speaking_sooner() -> None:
    limits = ClauseLimits(min_chars=5, max_chars=100, first_max_chars=20)
    clauses = split(" ".join(["word"] * 60), limits=limits)
    assert len(clauses[0]) <= 20
    assert max(len(c) for c in clauses[1:]) > 20
    assert all(len(c) <= 100 for c in clauses)


def test_a_word_longer_than_the_bound_is_cut_inside() -> None:
    clauses = split("x" * 100, limits=ClauseLimits(min_chars=5, max_chars=40, first_max_chars=40))
    assert [len(c) for c in clauses] == [40, 40, 20]


def test_punctuation_alone_and_repeated_marks() -> None:
    assert split("Really?! Yes... I think so.") == ["Really?!", " Yes...", " I think so."]
    assert split("... ") == ["... "]


def test_nothing_pending_flushes_empty() -> None:
    splitter = ClauseSplitter()
    assert splitter.feed("") == []
    assert splitter.flush() == ""


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="min_chars"):
        ClauseLimits(min_chars=50, max_chars=10)
    with pytest.raises(ValueError, match="min_chars"):
        ClauseLimits(min_chars=50, first_max_chars=10)

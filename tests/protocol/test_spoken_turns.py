"""The placeholder of a spoken turn and the rule that puts its transcript in place."""

from __future__ import annotations

from protocol.conversation import Turn
from protocol.spoken_turns import (
    audio_turn_text,
    is_audio_placeholder,
    spoken_turn_indexes,
    with_transcript,
)


def test_the_placeholder_is_recognised_exactly() -> None:
    assert is_audio_placeholder(audio_turn_text(2480))
    assert not is_audio_placeholder("[audio 2480 ms] and more")
    assert not is_audio_placeholder("say [audio 5 ms]")
    assert not is_audio_placeholder("[audio ms]")


def test_only_the_trailing_user_placeholders_are_replaced() -> None:
    turns = [
        Turn("user", "[audio 100 ms]"),
        Turn("assistant", "answered already"),
        Turn("user", "typed"),
        Turn("user", "[audio 200 ms]"),
        Turn("user", "[audio 300 ms]"),
    ]
    assert spoken_turn_indexes(turns) == [3, 4]
    assert [t.text for t in with_transcript(turns, "heard")] == [
        "[audio 100 ms]",
        "answered already",
        "typed",
        "heard",
    ]


def test_nothing_to_replace_leaves_the_turns_as_they_are() -> None:
    turns = [Turn("user", "[audio 100 ms]"), Turn("assistant", "done")]
    assert spoken_turn_indexes(turns) == []
    assert with_transcript(turns, "heard") == turns

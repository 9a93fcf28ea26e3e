"""Spoken user turns in the conversation: the placeholder, and its transcript.

A committed voice turn enters the history as ``[audio N ms]`` (the engine gets
the audio itself). A speech engine that transcribes it reports the words; the
session core and the engine then put them in place of the placeholder, by the
same rule (:func:`with_transcript`), so the history and the prompt agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from protocol.conversation import Turn

_PLACEHOLDER = re.compile(r"\[audio \d+ ms\]")


def audio_turn_text(duration_ms: int) -> str:
    """The conversation's placeholder for a spoken turn (engines get the audio itself)."""
    return f"[audio {duration_ms} ms]"


def is_audio_placeholder(text: str) -> bool:
    """Whether a user turn's text is the placeholder of a spoken turn."""
    return _PLACEHOLDER.fullmatch(text) is not None


def spoken_turn_indexes(turns: Sequence[Turn]) -> list[int]:
    """Indexes of the placeholders among the user turns the conversation ends with.

    Those are the turns whose audio one engine request carries (every turn
    committed since the last answer); earlier placeholders were answered
    already and keep their form.
    """
    indexes: list[int] = []
    index = len(turns) - 1
    while index >= 0 and turns[index].role == "user":
        if is_audio_placeholder(turns[index].text):
            indexes.append(index)
        index -= 1
    indexes.reverse()
    return indexes


def with_transcript(turns: Sequence[Turn], text: str) -> list[Turn]:
    """The turns with the trailing spoken turns' placeholders replaced by ``text``.

    The request's audio is all of them, heard as one: the first placeholder
    becomes the transcript and the others go. Unchanged when there is none.
    """
    indexes = spoken_turn_indexes(turns)
    if not indexes:
        return list(turns)
    first, dropped = indexes[0], set(indexes[1:])
    out: list[Turn] = []
    for index, turn in enumerate(turns):
        if index == first:
            out.append(Turn("user", text))
        elif index not in dropped:
            out.append(turn)
    return out

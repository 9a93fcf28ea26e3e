"""Cut streamed LLM text into clauses, so each is spoken as soon as it is complete.

Sans-I/O: :meth:`ClauseSplitter.feed` takes text as it streams and returns the
clauses it completed; :meth:`ClauseSplitter.flush` returns the rest at the end.
The clauses joined give back the text exactly (whitespace included: a clause's
leading space belongs to it), so what is shown and kept in the history is what
the LLM wrote.

A clause ends at a sentence end (``.``, ``!``, ``?``, ``…``, with closing quotes
or brackets, before whitespace) unless the word before the period is a known
abbreviation (``Dr.``, ``e.g.``) or an initial (``J.``, ``U.S.``); at ``,``,
``;``, ``:`` or a dash before whitespace once it has ``min_chars``; at a line
break; and, when none comes within ``max_chars`` (a list of numbers, a run-on
sentence), at the last space before that bound (mid-word only if there is no
space at all). The first clause has a shorter bound (``first_max_chars``), so an
answer starts speaking soon whatever its punctuation. A period between digits
(``3.14``) or a comma inside a number (``1,000``) is no boundary: no whitespace
follows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "approx",
        "dept",
        "est",
        "fig",
        "inc",
        "ltd",
        "co",
        "no",
        "vol",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ]
)
"""Words whose period does not end a sentence (lowercase, without the final period)."""

_SENTENCE_ENDS = frozenset(".!?…")
_CLAUSE_ENDS = frozenset(",;:\u2014\u2013")  # em and en dashes
_CLOSERS = frozenset("\"')]}\u201d\u2019\u00bb")  # closing quotes
_OPENERS = frozenset("\"'([{\u201c\u2018\u00ab")
_INITIALS = re.compile(r"(?:[a-z]\.)*[a-z]")


@dataclass(frozen=True, slots=True)
class ClauseLimits:
    """Where a clause may or must end."""

    min_chars: int = 16
    """A comma, semicolon, colon or dash ends a clause only after this many characters
    (a sentence end or a line break always does)."""
    max_chars: int = 180
    """A clause is cut at the last space before this bound when nothing ended it."""
    first_max_chars: int = 60
    """The bound of the first clause: the answer starts speaking sooner (time to first
    audio is the LLM's time to this clause plus its synthesis)."""

    def __post_init__(self) -> None:
        if not 1 <= self.min_chars <= min(self.max_chars, self.first_max_chars):
            raise ValueError("clause limits need 1 <= min_chars <= max_chars, first_max_chars")


class ClauseSplitter:
    """Streamed text in, complete clauses out."""

    __slots__ = ("_bound", "_buffer", "_limits", "_scanned")

    def __init__(self, limits: ClauseLimits | None = None) -> None:
        self._limits = limits or ClauseLimits()
        self._buffer = ""
        self._scanned = 0
        """Characters of the buffer known to hold no boundary."""
        self._bound = self._limits.first_max_chars
        """Where the current clause is cut if nothing ends it."""

    @property
    def pending(self) -> str:
        """Text fed but not yet part of a clause."""
        return self._buffer

    def feed(self, text: str) -> list[str]:
        """The clauses ``text`` completed (possibly none), in order."""
        self._buffer += text
        clauses: list[str] = []
        while (end := self._next_boundary()) is not None:
            clauses.append(self._buffer[:end])
            self._buffer = self._buffer[end:]
            self._scanned = 0
            self._bound = self._limits.max_chars
        return clauses

    def flush(self) -> str:
        """The rest of the text (the last clause; empty when nothing is pending)."""
        rest, self._buffer, self._scanned = self._buffer, "", 0
        return rest

    def _next_boundary(self) -> int | None:
        """End of the first complete clause in the buffer, or ``None`` (need more text)."""
        buffer = self._buffer
        bound = self._bound
        size = len(buffer)
        index = self._scanned
        while index < size:
            char = buffer[index]
            if char == "\n" and buffer[:index].strip():
                return index + 1
            if char in _SENTENCE_ENDS or char in _CLAUSE_ENDS:
                after = index + 1
                while after < size and (
                    buffer[after] in _CLOSERS or buffer[after] in _SENTENCE_ENDS
                ):
                    after += 1
                if after == size:
                    break  # what follows decides: wait for it
                if buffer[after].isspace() and self._ends_here(buffer, index, after):
                    return after
            if index + 1 >= bound:
                return self._cut(buffer, index + 1)
            index += 1
        self._scanned = index
        return None

    def _ends_here(self, buffer: str, index: int, after: int) -> bool:
        char = buffer[index]
        if char in _CLAUSE_ENDS:
            return len(buffer[:after].strip()) >= self._limits.min_chars
        # Marks alone ("...") are no sentence; an abbreviation's period ends none.
        has_words = any(c.isalnum() for c in buffer[:index])
        return has_words and not (char == "." and _abbreviated(buffer, index))

    def _cut(self, buffer: str, bound: int) -> int:
        """Where to end an over-long clause: after the last space before ``bound``."""
        space = max(buffer.rfind(" ", 0, bound), buffer.rfind("\t", 0, bound))
        if space > 0 and buffer[:space].strip():
            return space + 1
        return bound


def _abbreviated(buffer: str, period: int) -> bool:
    """Whether the word before the period at ``period`` is an abbreviation or an initial."""
    start = period
    while start > 0 and not buffer[start - 1].isspace() and buffer[start - 1] not in _OPENERS:
        start -= 1
    word = buffer[start:period].lower()
    if not word:
        return False
    return word in ABBREVIATIONS or _INITIALS.fullmatch(word) is not None

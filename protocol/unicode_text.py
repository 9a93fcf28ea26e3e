"""Text from outside made encodable: lone surrogates replaced.

JSON may spell a lone surrogate (``"\\ud800"``); ``json.loads`` then gives a ``str``
that no codec can write, and the session's JSON or msgpack encoder fails on it far from
where it came in. Text an upstream or a speech server sends passes through
:func:`valid_text` at that boundary, so everything inside is valid Unicode.
"""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (itself when it has none).

    Two halves of a pair that met in one string (``"\ud83d" + "\ude00"``) are joined
    into their character.
    """
    if text.isascii():
        return text  # the common case, one pass in C
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text

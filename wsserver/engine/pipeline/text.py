"""Text the pipeline takes from outside (a speech server, a speech model), made valid.

A JSON answer may carry ``"\\ud800"``: valid JSON, but a lone surrogate is not a
character and cannot be encoded, so the request it reaches next (the LLM's, the
speech server's) or the log line that names it breaks. Control characters have
no place in a transcript or an error message either.
"""

from __future__ import annotations

import re

from protocol.unicode_text import valid_text as valid_unicode

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
"""C0 and C1 controls and DEL, except tab, newline, vertical tab, form feed, return."""


def valid_text(text: str) -> str:
    """``text`` with unpaired surrogates replaced by U+FFFD and control characters removed.

    A surrogate pair written as two escapes (``"\\ud83d\\ude00"``) is joined into its
    character; whitespace controls (tab, newline, return, vertical tab, form feed) stay.
    """
    return _CONTROL.sub("", valid_unicode(text))

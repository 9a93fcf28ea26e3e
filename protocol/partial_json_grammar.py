"""The grammar tables of the incremental JSON parser: modes, punctuation, numbers, strings."""

from __future__ import annotations

import re
from typing import Final

MISSING: Final = object()  # 'no value here yet': None is a real JSON value

# Where the parser is between tokens, or which token it is inside.
VALUE = 0  # a value must come next
ARRAY_FIRST = 1  # just after '[': a value or ']'
ARRAY_NEXT = 2  # after an array element: ',' or ']'
OBJECT_FIRST = 3  # just after '{': a key or '}'
KEY = 4  # after ',' in an object: a key
COLON = 5  # after a key
OBJECT_NEXT = 6  # after a member's value: ',' or '}'
STRING = 7
NUMBER = 8
LITERAL = 9
DONE = 10  # the top-level value is complete; only whitespace may follow
CLOSE = -1  # not a mode: the innermost container ends

# The transitions between tokens: for each mode, the punctuation it accepts and where
# each leads, and what it wanted (for error messages). A value may also start in
# VALUE and ARRAY_FIRST; that is _start_value's business.
PUNCTUATION: Final[dict[int, tuple[dict[str, int], str]]] = {
    ARRAY_FIRST: ({"]": CLOSE}, "a value or ']'"),
    ARRAY_NEXT: ({",": VALUE, "]": CLOSE}, "',' or ']' in an array"),
    OBJECT_FIRST: ({'"': STRING, "}": CLOSE}, "an object key or '}'"),
    KEY: ({'"': STRING}, "an object key"),
    COLON: ({":": VALUE}, "':' after an object key"),
    OBJECT_NEXT: ({",": KEY, "}": CLOSE}, "',' or '}' in an object"),
    DONE: ({}, "nothing after the document"),
}

# Number grammar states, named after the last part read.
N_SIGN, N_ZERO, N_INT, N_DOT, N_FRAC, N_EXP, N_EXP_SIGN, N_EXP_DIGITS = range(8)
N_TERMINAL: Final = frozenset({N_ZERO, N_INT, N_FRAC, N_EXP_DIGITS})
DIGITS: Final = "0123456789"
EXP: Final = {"e": N_EXP, "E": N_EXP}
NUMBER_EDGES: Final[dict[int, dict[str, int]]] = {
    N_SIGN: {"0": N_ZERO, **dict.fromkeys("123456789", N_INT)},
    N_ZERO: {".": N_DOT, **EXP},
    N_INT: {**dict.fromkeys(DIGITS, N_INT), ".": N_DOT, **EXP},
    N_DOT: dict.fromkeys(DIGITS, N_FRAC),
    N_FRAC: {**dict.fromkeys(DIGITS, N_FRAC), **EXP},
    N_EXP: {"+": N_EXP_SIGN, "-": N_EXP_SIGN, **dict.fromkeys(DIGITS, N_EXP_DIGITS)},
    N_EXP_SIGN: dict.fromkeys(DIGITS, N_EXP_DIGITS),
    N_EXP_DIGITS: dict.fromkeys(DIGITS, N_EXP_DIGITS),
}
NUMBER_START: Final = {"-": N_SIGN, "0": N_ZERO, **dict.fromkeys("123456789", N_INT)}
# Characters to drop from the end of a cut number to reach its last valid prefix.
NUMBER_TRIM: Final = {N_DOT: 1, N_EXP: 1, N_EXP_SIGN: 2}

LITERALS: Final = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
SIMPLE_ESCAPES: Final = dict(zip('"\\/bfnrt', '"\\/\b\f\n\r\t', strict=True))
HEX: Final = frozenset("0123456789abcdefABCDEF")
WHITESPACE: Final = frozenset(" \t\n\r")
# Runs of string characters that need no decoding: taken in one step, so long strings
# in large fragments do not pay the per-character dispatch.
PLAIN_RUN: Final = re.compile(r'[^"\\\x00-\x1f]+')
PLAIN_UNICODE_RUN: Final = re.compile(r'[^"\\\x00-\x1f\ud800-\udfff]+')

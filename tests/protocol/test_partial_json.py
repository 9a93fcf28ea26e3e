"""The incremental JSON parser: prefixes, fragments, early rejection, linear cost.

"Consistent" (checked at every cut of generated documents) means that a provisional
value could still become the final one under the documented rules:

* at the top level, ``None`` is consistent with anything (nothing parsed yet);
* ``None`` and booleans inside a container are complete: they equal the final value;
* a provisional number is a number; if it is a float the final one is too (a fraction
  or exponent never goes away); a non-zero one has the final one's sign; and if both are
  ints, the provisional digits are a prefix of the final digits;
* a provisional string is a prefix of the final string;
* a provisional list is no longer than the final one, every element but the last equals
  the final element exactly, and the last is consistent with its final counterpart;
* a provisional object's keys are a prefix, in order, of the final object's keys (the
  generated documents have no repeated keys); every member but the last equals the final
  one exactly, and the last is consistent.

The same relation holds between any provisional value and a later one.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.partial_json import PartialJson, PartialJsonError, parse_partial

# -- helpers ---------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (1 != 1.0 != True here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _negative(x: int | float) -> bool:
    return x < 0 or (isinstance(x, float) and math.copysign(1.0, x) < 0)


def consistent(prov: Any, final: Any, *, top: bool = True) -> bool:
    """Whether ``prov`` can still grow into ``final`` (see the module docstring)."""
    if prov is None:
        return top or final is None
    if isinstance(prov, bool):
        return same(prov, final)
    if _is_number(prov):
        if not _is_number(final) or (isinstance(prov, float) and not isinstance(final, float)):
            return False
        if prov != 0 and _negative(prov) != _negative(final):
            return False
        if isinstance(prov, int) and isinstance(final, int):
            return str(abs(final)).startswith(str(abs(prov)))
        return True
    if isinstance(prov, str):
        return isinstance(final, str) and final.startswith(prov)
    if isinstance(prov, list):
        if not isinstance(final, list) or len(prov) > len(final):
            return False
        if not all(same(p, f) for p, f in zip(prov[:-1], final, strict=False)):
            return False
        return not prov or consistent(prov[-1], final[len(prov) - 1], top=False)
    if isinstance(prov, dict):
        keys = list(prov)
        if not isinstance(final, dict) or keys != list(final)[: len(keys)]:
            return False
        if not all(same(prov[k], final[k]) for k in keys[:-1]):
            return False
        return not keys or consistent(prov[keys[-1]], final[keys[-1]], top=False)
    raise AssertionError(f"not a JSON value: {prov!r}")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_loads(text: str) -> Any:
    """json.loads without its NaN and Infinity extension: the JSON the parser accepts."""
    return json.loads(text, parse_constant=_refuse_constant)


def feed_by_char(text: str) -> PartialJson:
    parser = PartialJson()
    for c in text:
        parser.feed(c)
    return parser


# -- generated documents ---------------------------------------------------------------

# Every code point, lone surrogates included, plus a heavy dose of the ones JSON escapes.
_chars = st.one_of(
    st.characters(exclude_categories=()),
    st.sampled_from('"\\/\x00\x01\n\r\t\x1f\x7f\u2028\ud83d\ude00\U0001f600é'),
)
_text = st.text(alphabet=_chars, max_size=12)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_text, inner, max_size=5),
    max_leaves=25,
)
_whitespace = st.text(alphabet=" \t\n\r", max_size=3)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A JSON text in any of the layouts json.dumps produces, padded with whitespace."""
    value = draw(json_values)
    indent = draw(st.sampled_from([None, 0, 1, 2, "\t", " \r\n"]))
    separators = draw(
        st.sampled_from([None, (",", ":"), (", ", ": "), (" ,\n", "\t:  "), ("\r\n,", ":")])
    )
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=draw(st.booleans()))
    return draw(_whitespace) + text + draw(_whitespace)


@given(doc=documents(), data=st.data())
@settings(max_examples=300, deadline=None)
def test_every_prefix_is_accepted_and_consistent(doc: str, data: st.DataObject) -> None:
    final = json.loads(doc)
    parser = PartialJson()
    previous: Any = None
    assert parser.value is None
    for i, c in enumerate(doc):
        parser.feed(c)
        current = parser.value
        assert consistent(current, final), (doc[: i + 1], current)
        assert consistent(previous, current), (doc[: i + 1], previous, current)
        if parser.complete:  # a whole document already: e.g. "12" of "123"
            assert same(parser.finish(), json.loads(doc[: i + 1]))
        previous = current
    assert parser.complete
    assert same(parser.finish(), final)
    assert same(parser.value, final)
    cut = data.draw(st.integers(min_value=0, max_value=len(doc)))
    fresh = parse_partial(doc[:cut])
    assert consistent(fresh, final)
    assert same(fresh, feed_by_char(doc[:cut]).value)


@given(doc=documents(), data=st.data())
@settings(max_examples=300, deadline=None)
def test_any_fragmentation_gives_json_loads(doc: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(min_value=0, max_value=len(doc)))))
    parser = PartialJson()
    for start, end in zip([0, *cuts], [*cuts, len(doc)], strict=True):
        parser.feed(doc[start:end])  # empty fragments included
    assert same(parser.finish(), json.loads(doc))


# Text made of JSON's own pieces, so that nearly-valid documents come up often.
_tokens = st.sampled_from(
    ["{", "}", "[", "]", ",", ":", '"', "\\", "u", "d83d", "dc00", "0", "1", "-", "+", ".",
     "e", "E", "true", "nul", "l", "a", " ", "\n", "\x01", "'"]
)  # fmt: skip


@given(pieces=st.lists(_tokens, max_size=25))
@settings(max_examples=1000, deadline=None)
def test_agrees_with_json_loads_on_arbitrary_text(pieces: list[str]) -> None:
    text = "".join(pieces)
    try:
        expected: Any = strict_loads(text)
    except ValueError:
        expected = PartialJsonError
    parser = PartialJson()
    try:
        parser.feed(text)
    except PartialJsonError as exc:
        assert expected is PartialJsonError
        # Everything before the refused character is still a possible beginning.
        parse_partial(text[: exc.offset])
        with pytest.raises(PartialJsonError):
            parse_partial(text[: exc.offset + 1])
        return
    if expected is PartialJsonError:
        assert not parser.complete
        with pytest.raises(PartialJsonError):
            parser.finish()
    else:
        assert same(parser.finish(), expected)


# -- documented semantics --------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        # nothing yet
        ("", None),
        (" \n\t ", None),
        # strings
        ('"', ""),
        ('"hel', "hel"),
        ('{"a": "hel', {"a": "hel"}),
        ('"a\\', "a"),
        ('"a\\n', "a\n"),
        ('"a\\u00', "a"),
        ('"a\\u00e9', "aé"),
        ('"\\"\\\\\\/\\b\\f\\n\\r\\t', '"\\/\b\f\n\r\t'),
        # surrogate pairs cut anywhere: the high half waits for its partner
        ('"x\\ud83d', "x"),
        ('"x\\ud83d\\', "x"),
        ('"x\\ud83d\\u', "x"),
        ('"x\\ud83d\\ude0', "x"),
        ('"x\\ud83d\\ude00', "x\U0001f600"),
        ('"x\\ud83d\\u0041', "x\ud83dA"),
        ('"x\\ud83d\\n', "x\ud83d\n"),
        ('"x\\ud83d!', "x\ud83d!"),
        ('"x\\ud83d\\ud83d', "x\ud83d"),
        ('"x\\ud83d\\ud83d\\ude00', "x\ud83d\U0001f600"),
        ('"\\ude00', "\ude00"),
        ('"\U0001f600', "\U0001f600"),
        # numbers
        ("1", 1),
        ("12", 12),
        ("-", None),
        ("-1", -1),
        ("-0", 0),
        ("0", 0),
        ("1.", 1),
        ("1.5", 1.5),
        ("1.50", 1.5),
        ("1e", 1),
        ("1E+", 1),
        ("1.5e", 1.5),
        ("1.5e-", 1.5),
        ("1.5e-2", 0.015),
        ("1e2", 100.0),
        ("-0.0", -0.0),
        ("[-", []),
        ("[1, -", [1]),
        ('{"n": -', {}),
        ('{"n": 12', {"n": 12}),
        ('{"n": 1.', {"n": 1}),
        ("[1, 2", [1, 2]),
        ("[1, 2,", [1, 2]),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        # literals only when complete
        ("t", None),
        ("tru", None),
        ("true", True),
        ("fals", None),
        ("false", False),
        ("nul", None),
        ("null", None),
        ("[tr", []),
        ("[true", [True]),
        ('{"a": nul', {}),
        ('{"a": null', {"a": None}),
        ('{"a": fa', {}),
        # keys: omitted until their value starts
        ("{", {}),
        ('{"', {}),
        ('{"ke', {}),
        ('{"key"', {}),
        ('{"key" :', {}),
        ('{"key": ', {}),
        ('{"key": "', {"key": ""}),
        ('{"key": {', {"key": {}}),
        ('{"key": [', {"key": []}),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": 1, "b": [', {"a": 1, "b": []}),
        # nesting, empty containers, closed and open
        ("[", []),
        ("[[[", [[[]]]),
        ("[[], {}, [", [[], {}, []]),
        ('{"a": [1, {"b": [true, "x', {"a": [1, {"b": [True, "x"]}]}),
        ('[{"a": {"b": {"c": "d"}}}, ', [{"a": {"b": {"c": "d"}}}]),
        ('{"a": {}, "b": [[]]}', {"a": {}, "b": [[]]}),
        # a repeated key: the later value replaces the earlier, in the earlier's place
        ('{"a": 1, "b": 2, "a": "x', {"a": "x", "b": 2}),
    ],
)
def test_provisional_value(prefix: str, expected: Any) -> None:
    assert same(parse_partial(prefix), expected), parse_partial(prefix)
    assert same(feed_by_char(prefix).value, expected)


@pytest.mark.parametrize(
    "text",
    [
        "0", "-0", "12", "1.5", "1e5", "-1.25E-3", "true", "false", "null", '""', "[]", "{}",
        ' \t\n\r[ 1 , { "a" : [ ] } ] \n', '"\\ud83d"', '"\\ud83d\\n"', '"\\ud83d\\ude00"',
        '"\\udc00\\ud83d"', '{"a": 1, "a": 2}', "1e400", "-1e-400", "[1E400]", '"\x7f\u2028"',
    ],
)  # fmt: skip
def test_finish_matches_json_loads(text: str) -> None:
    parser = feed_by_char(text)
    assert parser.complete
    assert same(parser.finish(), json.loads(text))
    assert same(parser.finish(), parser.value)  # finish() does not change the parser


def test_top_level_number_is_complete_yet_can_grow() -> None:
    parser = PartialJson()
    parser.feed("12")
    assert parser.complete and parser.finish() == 12
    parser.feed("3.5")
    assert same(parser.finish(), 123.5)
    parser.feed(" ")
    with pytest.raises(PartialJsonError, match="offset 6"):
        parser.feed("4")


def test_value_is_a_fresh_copy() -> None:
    parser = PartialJson()
    parser.feed('{"a": [1, {"b": "c')
    parser.value["a"].append("mutated")
    parser.value["a"][1]["b"] = "mutated"
    parser.feed('d"}]}')
    assert parser.finish() == {"a": [1, {"b": "cd"}]}
    parser.finish()["a"].clear()
    assert parser.finish() == {"a": [1, {"b": "cd"}]}


# -- rejection -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ('{"a" 1', 5),
        ("[1,]", 3),
        ("[1,,2]", 3),
        ("{,", 1),
        ('{"a":1,}', 7),
        ('{"a"::1}', 5),
        ('{"a":1 "b":2}', 7),
        ('{"a":]', 5),
        ("{1:2}", 1),
        ("[}", 1),
        ("[1 2]", 3),
        ('{"a":1}}', 7),
        ('{"a":1} x', 8),
        ('"" ""', 3),
        ("truefalse", 4),
        ("01", 1),
        ("00", 1),
        ("-01", 2),
        ("1.e5", 2),
        ("1.5.", 3),
        ("1ex", 2),
        ("1e+-1", 3),
        ("[-]", 2),
        (".5", 0),
        ("+1", 0),
        ("'a'", 0),
        ("{'a': 1}", 1),
        ("NaN", 0),
        ("Infinity", 0),
        ("-Infinity", 1),
        ("[1, nan]", 5),
        ("tru e", 3),
        ("nulx", 3),
        ("True", 0),
        ('"a\nb"', 2),
        ('"\x00"', 1),
        ('"\x1f"', 1),
        ('["\t"]', 2),
        ('"\\x41"', 2),
        ('"\\U0041"', 2),
        ('"\\u12G4"', 5),
        ('"\\u 123"', 3),
        ('"\\ud83d\\uZZZZ"', 9),
        ('"\\ud83d\\x"', 8),
        ("\u00a01", 0),
        ("\ufeff1", 0),
        ("[1]\x00", 3),
        ("}", 0),
        (":", 0),
    ],
)
def test_invalid_text_is_refused_at_the_first_impossible_character(text: str, offset: int) -> None:
    with pytest.raises(ValueError):
        strict_loads(text)
    parser = PartialJson()
    for i, c in enumerate(text):
        if i < offset:
            parser.feed(c)
            continue
        with pytest.raises(PartialJsonError) as caught:
            parser.feed(c)
        assert caught.value.offset == offset
        assert f"offset {offset}" in str(caught.value)
        break
    with pytest.raises(PartialJsonError) as whole:
        parse_partial(text)
    assert whole.value.offset == offset
    # The parser is spent: it keeps refusing, with the same error.
    with pytest.raises(PartialJsonError) as again:
        parser.feed("1")
    assert again.value is caught.value
    with pytest.raises(PartialJsonError):
        parser.finish()
    assert not parser.complete


def test_error_belongs_to_both_hierarchies() -> None:
    with pytest.raises(PartialJsonError) as caught:
        parse_partial("[1,]")
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, ProtocolError)
    assert str(caught.value) == "unexpected ']': expected a value at offset 3"


@pytest.mark.parametrize(
    "text",
    ["", "  ", "{", '{"a"', '{"a":', '{"a":1', '{"a":1,', "[1,", "[", '"abc', '"\\',
     '"\\u12', '"\\ud83d', "tru", "nul", "-", "1.", "1e", "1e+", "[1.5e"],
)  # fmt: skip
def test_finish_refuses_an_incomplete_document(text: str) -> None:
    parser = feed_by_char(text)
    assert not parser.complete
    with pytest.raises(PartialJsonError, match=f"unexpected end of document at offset {len(text)}"):
        parser.finish()


def test_finish_on_an_incomplete_document_does_not_spend_the_parser() -> None:
    parser = PartialJson()
    parser.feed('{"a"')
    with pytest.raises(PartialJsonError):
        parser.finish()
    parser.feed(": 1}")
    assert parser.finish() == {"a": 1}


@pytest.mark.skipif(sys.get_int_max_str_digits() == 0, reason="no limit on int digits")
def test_an_int_past_the_digit_limit_fails_like_json_loads() -> None:
    digits = "1" * (sys.get_int_max_str_digits() + 1)
    with pytest.raises(ValueError):
        json.loads(digits)
    parser = PartialJson()
    parser.feed("[" + digits)
    assert parser.value == []  # too long for an int so far, but ".5" would make it valid
    assert same(parse_partial("[" + digits + ".5]"), [float(digits + ".5")])
    with pytest.raises(PartialJsonError, match="number too long"):
        parser.feed("]")


# -- cost ------------------------------------------------------------------------------


def _big_document(size: int) -> str:
    items: list[Any] = []
    doc = ""
    while len(doc) < size:
        start = len(items)
        items.extend(
            {"id": i, "name": f'item é\\"{i}"', "tags": ["a"], "x": i / 7}
            for i in range(start, start + 500)
        )
        doc = json.dumps({"items": items, "ok": True, "none": None})
    return doc


def test_feeding_200kb_one_character_at_a_time_is_linear() -> None:
    # Re-parsing the text so far on every feed would be ~2*10^10 character steps here
    # (hours); the stack machine takes one step per character.
    doc = _big_document(200_000)
    assert len(doc) >= 200_000
    parser = PartialJson()
    for c in doc:
        parser.feed(c)
    assert same(parser.finish(), json.loads(doc))


def test_a_long_string_fed_one_character_at_a_time() -> None:
    body = ("abc\\n\\u00e9\\ud83d\\ude00 " * 10_000)[:200_000]
    body = body[: body.rfind(" ") + 1]  # cut between escapes
    doc = '{"s": "' + body + '"}'
    parser = PartialJson()
    for i, c in enumerate(doc):
        parser.feed(c)
        if i % 20_000 == 0:
            assert consistent(parser.value, json.loads(doc))
    assert parser.finish() == json.loads(doc)


def test_deep_nesting_needs_no_recursion() -> None:
    depth = 20 * sys.getrecursionlimit()
    parser = PartialJson()
    parser.feed("[" * depth + '"x')
    value = parser.value
    for _ in range(depth - 1):
        (value,) = value
    assert value == ["x"]
    parser.feed('"' + "]" * depth)
    assert parser.complete


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ('"\\ud800"', 7),
        ('"\\ud800x"', 7),
        ('"\\ud800\\n"', 8),
        ('"\\ud800\\u0041"', 12),
        ('"\\udc00"', 6),
        ('{"\\udfff": 1}', 7),
        ('"a\ud800"', 2),
    ],
)
def test_unicode_only_refuses_lone_surrogates(text: str, offset: int) -> None:
    """With ``unicode_only``, a string that could not be sent as UTF-8 is refused."""
    assert json.loads(text) is not None  # what a plain parser accepts
    parser = PartialJson(unicode_only=True)
    with pytest.raises(PartialJsonError) as caught:
        parser.feed(text)
    assert caught.value.offset == offset
    assert "surrogate" in str(caught.value)


def test_unicode_only_keeps_pairs() -> None:
    parser = PartialJson(unicode_only=True)
    for piece in ['"\\ud8', "3d\\", "ude00 \U0001f600", '"']:
        parser.feed(piece)
    assert parser.finish() == "\U0001f600 \U0001f600"

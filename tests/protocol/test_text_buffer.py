from __future__ import annotations

from protocol.text_buffer import TextBuffer


def test_text_comes_back_whole_however_it_was_appended() -> None:
    buffer = TextBuffer("pre ")
    pieces = [f"w{i} " for i in range(5000)]
    for piece in pieces:
        buffer.append(piece)
    expected = "pre " + "".join(pieces)
    assert buffer.text() == expected
    assert len(buffer) == buffer.chars == len(expected)
    buffer.append("more")
    assert buffer.text() == expected + "more"
    assert TextBuffer().text() == ""

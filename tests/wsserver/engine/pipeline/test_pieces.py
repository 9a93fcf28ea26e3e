"""A clause's audio in pieces, each with the words that start in it (pure)."""

from __future__ import annotations

from wsserver.engine.pipeline.pieces import spoken_pieces

RATE = 16000


def _audio(ms: int) -> bytes:
    return b"\x01\x00" * (RATE * ms // 1000)


def test_pieces_join_back_and_each_word_goes_with_the_piece_it_starts_in() -> None:
    text = " one two three four five six seven eight"
    pieces = spoken_pieces(text, _audio(1000), RATE, 100)
    assert "".join(t for t, _, _ in pieces) == text
    assert b"".join(a for _, a, _ in pieces) == _audio(1000)
    assert [ms for _, _, ms in pieces] == [100.0] * 10
    # Even speaking rate: a word starting at character c starts at c / len(text) of the
    # audio, and must leave with the piece covering that moment, never later.
    start = 0.0
    for index, (piece_text, _, ms) in enumerate(pieces):
        for word_offset in range(len(piece_text)):
            at = text.index(piece_text) + word_offset if piece_text else 0
            if piece_text[word_offset] != " " and (at == 0 or text[at - 1] == " "):
                moment = at / len(text) * 1000
                assert start <= moment + 1e-6, f"{piece_text!r} left after its audio"
                assert moment < start + ms + 100, f"{piece_text!r} left far too early"
        start += ms
        assert index < 10


def test_a_short_last_piece_and_odd_bytes() -> None:
    pieces = spoken_pieces("hi", _audio(250) + b"\x07", RATE, 100)
    assert [ms for _, _, ms in pieces] == [100.0, 100.0, 50.0]
    assert pieces[0][0] == "hi"


def test_no_audio_is_one_text_piece_and_no_text_is_audio_alone() -> None:
    assert spoken_pieces(" *", b"", RATE, 100) == [(" *", b"", 0.0)]
    pieces = spoken_pieces("", _audio(200), RATE, 100)
    assert [t for t, _, _ in pieces] == ["", ""]

"""A clause's audio in short pieces, each with the words that start in it.

Sans-I/O. The session keeps, of an interrupted answer, the text whose audio was
played in full (``ResponseState.heard_chars``). Sending a whole clause's text
with its first audio would count the clause heard after its first syllable;
sending it with its last would let text trail its audio. So the audio is cut
into pieces of ``piece_ms`` and each word goes with the piece in which it starts,
its start time estimated by assuming an even speaking rate over the clause
(characters are spread evenly over the audio). The text never leaves after its
audio; a word is counted heard once the piece it starts in has played, at most
one piece early, give or take the unevenness of real speech.
"""

from __future__ import annotations

BYTES_PER_SAMPLE = 2


def spoken_pieces(
    text: str, audio: bytes, sample_rate: int, piece_ms: float
) -> list[tuple[str, bytes, float]]:
    """``(text, audio, audio_ms)`` pieces that join back to ``text`` and ``audio``.

    No audio gives one text-only piece; no text gives the audio alone.
    """
    audio = audio[: len(audio) - len(audio) % BYTES_PER_SAMPLE]
    if not audio:
        return [(text, b"", 0.0)]
    samples = len(audio) // BYTES_PER_SAMPLE
    per_piece = max(1, round(sample_rate * piece_ms / 1000))
    count = -(-samples // per_piece)
    cuts = [0]
    for index in range(1, count):
        cuts.append(max(cuts[-1], _word_cut(text, len(text) * index * per_piece / samples)))
    cuts.append(len(text))
    pieces: list[tuple[str, bytes, float]] = []
    for index in range(count):
        start = index * per_piece
        end = min(samples, start + per_piece)
        chunk = audio[start * BYTES_PER_SAMPLE : end * BYTES_PER_SAMPLE]
        pieces.append(
            (text[cuts[index] : cuts[index + 1]], chunk, (end - start) / sample_rate * 1000.0)
        )
    return pieces


def _word_cut(text: str, position: float) -> int:
    """The start of the whitespace before the first word starting at or after ``position``."""
    index = min(len(text), max(0, int(-(-position // 1))))
    size = len(text)
    # Forward to the start of a word (a non-space after a space, or the text's start).
    while index < size and not (
        not text[index].isspace() and (index == 0 or text[index - 1].isspace())
    ):
        index += 1
    if index >= size:
        return size
    # Back over the whitespace before it: a word's leading space travels with it.
    while index > 0 and text[index - 1].isspace():
        index -= 1
    return index

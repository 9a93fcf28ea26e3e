"""A response's text, kept as one compact copy however many tokens it arrived in."""

from __future__ import annotations

_CHUNK_CHARS = 4096
"""Tokens are joined into chunks of about this size."""
_CHUNK_PIECES = 64
"""...or of this many tokens, so a tail of tiny tokens never holds many objects."""


class TextBuffer:
    """Append-only text.

    A list of one string per token costs about 60 bytes of object overhead per
    token on top of the text (ten times a short token's characters). Here the
    tokens are joined into chunks as they come, so the memory is the text plus
    at most ``_CHUNK_PIECES`` small strings.
    """

    __slots__ = ("_chunks", "_tail", "_tail_chars", "chars")

    def __init__(self, text: str = "") -> None:
        self._chunks: list[str] = [text] if text else []
        self._tail: list[str] = []
        self._tail_chars = 0
        self.chars = len(text)
        """Characters held."""

    def __len__(self) -> int:
        return self.chars

    def append(self, text: str) -> None:
        """Add text at the end."""
        self._tail.append(text)
        self._tail_chars += len(text)
        self.chars += len(text)
        if self._tail_chars >= _CHUNK_CHARS or len(self._tail) >= _CHUNK_PIECES:
            self._chunks.append("".join(self._tail))
            self._tail = []
            self._tail_chars = 0

    def text(self) -> str:
        """The whole text."""
        if self._tail:
            self._chunks.append("".join(self._tail))
            self._tail = []
            self._tail_chars = 0
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

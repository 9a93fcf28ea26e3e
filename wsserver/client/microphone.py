"""The client side of input audio: chunking, numbering and the resend window.

The server takes chunks of 10 to 100 ms with increasing seq and ignores a seq
it already has. So a client numbers every chunk, keeps the last second of them,
and after a resume sends again those above the ``audio_in_seq`` the server
reports: nothing the user said in a network handoff is lost or doubled.
"""

from __future__ import annotations

from collections import deque

from protocol.audio_frame import AudioFrame, AudioKind

MAX_CHUNK_MS = 100
MIN_CHUNK_MS = 10
RESEND_MS = 1000
"""Input audio kept for a resend after a reconnect (the server's real-time burst)."""


class Microphone:
    """Turns PCM16 of any length into numbered audio frames."""

    __slots__ = ("_bytes_per_ms", "_kept", "_kept_ms", "_tail", "next_seq")

    def __init__(self, sample_rate: int) -> None:
        self._bytes_per_ms = sample_rate * 2 // 1000
        self._tail = b""
        self._kept: deque[tuple[int, bytes, float]] = deque()
        self._kept_ms = 0.0
        self.next_seq = 0

    def frames(self, pcm: bytes, *, last: bool = False) -> list[bytes]:
        """Frames for ``pcm``: chunks of at most 100 ms.

        Audio shorter than 10 ms waits for the next call; ``last`` flushes it
        (padded with silence to 10 ms) and flags the final chunk.
        """
        data = self._tail + pcm
        step = MAX_CHUNK_MS * self._bytes_per_ms
        minimum = MIN_CHUNK_MS * self._bytes_per_ms
        chunks = [data[i : i + step] for i in range(0, len(data), step)]
        self._tail = b""
        if chunks and len(chunks[-1]) < minimum:
            if last:
                chunks[-1] += bytes(minimum - len(chunks[-1]))
            else:
                self._tail = chunks.pop()
        if last and not chunks:
            chunks = [bytes(minimum)]
        return [
            self._frame(chunk, last and index == len(chunks) - 1)
            for index, chunk in enumerate(chunks)
        ]

    def _frame(self, chunk: bytes, last: bool) -> bytes:
        seq = self.next_seq
        self.next_seq += 1
        frame = AudioFrame(AudioKind.INPUT, 0, seq, chunk, last).encode()
        duration_ms = len(chunk) / self._bytes_per_ms
        self._kept.append((seq, frame, duration_ms))
        self._kept_ms += duration_ms
        while self._kept_ms > RESEND_MS and len(self._kept) > 1:
            self._kept_ms -= self._kept.popleft()[2]
        return frame

    def resend_after(self, server_seq: int) -> list[bytes]:
        """Kept frames the server does not have (its last accepted seq given)."""
        return [frame for seq, frame, _ in self._kept if seq > server_seq]

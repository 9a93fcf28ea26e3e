"""PCM16 mono helpers: a streaming resampler, WAV wrapping and parsing, durations."""

from __future__ import annotations

import io
import struct
import wave

import numpy as np
import soxr

BYTES_PER_SAMPLE = 2


def duration_ms(audio: bytes, sample_rate: int) -> float:
    """Playing time of PCM16 mono ``audio``."""
    return len(audio) / BYTES_PER_SAMPLE / sample_rate * 1000.0


class Resampler:
    """PCM16 mono from one rate to another, chunk by chunk (soxr keeps the filter state).

    Bytes may arrive split inside a sample (an HTTP body): the odd byte waits
    for the next chunk.
    """

    __slots__ = ("_carry", "_stream")

    def __init__(self, from_rate: int, to_rate: int) -> None:
        self._stream = (
            None if from_rate == to_rate else soxr.ResampleStream(from_rate, to_rate, 1, "int16")
        )
        self._carry = b""

    def feed(self, data: bytes, *, last: bool = False) -> bytes:
        """The resampled audio of ``data`` (the filter delays a little until ``last``)."""
        data = self._carry + data
        cut = len(data) - len(data) % BYTES_PER_SAMPLE
        data, self._carry = data[:cut], data[cut:]
        if self._stream is None:
            return data
        samples = np.frombuffer(data, dtype=np.int16)
        out = self._stream.resample_chunk(samples, last=last)
        return bytes(np.asarray(out, dtype=np.int16).tobytes())


def to_wav(audio: bytes, sample_rate: int) -> bytes:
    """PCM16 mono as a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(BYTES_PER_SAMPLE)
        wav.setframerate(sample_rate)
        wav.writeframes(audio)
    return buffer.getvalue()


class WavHeaderError(ValueError):
    """The bytes are not a PCM16 mono WAV stream's header."""


def parse_wav_header(head: bytes) -> tuple[int, int] | None:
    """``(sample_rate, offset of the samples)`` of a streamed WAV, or ``None`` if more is needed.

    Streaming servers write the sizes as unknown (0 or 0xFFFFFFFF): only the
    format chunk and the start of the data chunk are read.
    """
    if len(head) < 12:
        return None
    if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        raise WavHeaderError("not a wav stream (no RIFF/WAVE header)")
    offset = 12
    rate: int | None = None
    while True:
        if len(head) < offset + 8:
            return None
        chunk_id = head[offset : offset + 4]
        (size,) = struct.unpack_from("<I", head, offset + 4)
        body = offset + 8
        if chunk_id == b"data":
            if rate is None:
                raise WavHeaderError("wav data before its format chunk")
            return rate, body
        if size > 1 << 16:
            raise WavHeaderError(f"wav header chunk {chunk_id!r} of {size} bytes")
        if len(head) < body + size:
            return None
        if chunk_id == b"fmt ":
            if size < 16:
                raise WavHeaderError("wav format chunk too short")
            tag, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", head, body)
            if tag != 1 or channels != 1 or bits != 16:
                raise WavHeaderError(
                    f"wav is not pcm16 mono (format {tag}, {channels} channels, {bits} bits)"
                )
            if not 1000 <= rate <= 192_000:
                raise WavHeaderError(f"wav sample rate {rate} out of range")
        offset = body + size + size % 2

"""The microphone audio each voice session streams, and the speech the server should hear in it.

A session loops ``[background, speech, background]``: 2 s of one background
fixture (silence or noise), one speech fixture (~2 s), the same background again,
cut to whole 20 ms chunks. The same background on both sides matters: with the
energy detector a noise that starts after silence is heard as speech (the noise
floor has fallen to the silence), which would add a false turn every loop.

What the server should report is computed, not guessed: the client runs the
server's own detector (:class:`wsserver.audio.vad.EnergyVad`, with the settings
the session asks for) over the exact chunks it will send, so every expected
``input_audio.speech_started`` has a known ``audio_start_ms`` and deciding chunk.
"""

from __future__ import annotations

import math
import wave
from dataclasses import dataclass
from functools import cache

from loadtest.common.servers import REPO_ROOT
from loadtest.voice.config import CHUNK_MS
from protocol.audio_frame import HEADER_SIZE, AudioFrame, AudioKind
from protocol.messages import AudioSettings, TurnDetection
from wsserver.audio.input import vad_settings
from wsserver.audio.vad import EnergyVad, VadSettings, pcm16

SAMPLE_RATE = 16_000
CHUNK_BYTES = SAMPLE_RATE * 2 * CHUNK_MS // 1000
HEADER_BYTES = HEADER_SIZE
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "audio"
BACKGROUNDS = ("silence", "noise")
SPEECHES = ("speech_hello", "speech_stop", "speech_weather")


@dataclass(frozen=True, slots=True)
class AudioLoop:
    """One looped recording, as the 20 ms chunks a session sends."""

    name: str
    chunks: tuple[bytes, ...]

    @property
    def length_ms(self) -> int:
        """Duration of one pass."""
        return len(self.chunks) * CHUNK_MS


def session_start(*, create_response: bool) -> dict[str, object]:
    """``session.start`` of a voice session: 16 kHz, audio output, server VAD."""
    return {
        "type": "session.start",
        "audio": {
            "sample_rate": SAMPLE_RATE,
            "output": True,
            "turn_detection": {
                "type": "server_vad",
                "create_response": create_response,
                "interrupt_response": True,
            },
        },
    }


def detector_settings() -> VadSettings:
    """The detector settings the server derives from the turn detection we ask for."""
    audio = AudioSettings(turn_detection=TurnDetection())  # 16 kHz, the defaults we send
    return vad_settings(audio)


def load_pcm(name: str) -> bytes:
    """A fixture's samples; it must be 16 kHz mono PCM16."""
    path = FIXTURES / f"{name}.wav"
    with wave.open(str(path), "rb") as recording:
        shape = (recording.getframerate(), recording.getnchannels(), recording.getsampwidth())
        if shape != (SAMPLE_RATE, 1, 2):
            raise ValueError(f"{path}: want 16 kHz mono PCM16, got (rate, channels, width) {shape}")
        return recording.readframes(recording.getnframes())


@cache
def audio_loops() -> tuple[AudioLoop, ...]:
    """Every background x speech combination, each cut to whole chunks."""
    loops = []
    for background in BACKGROUNDS:
        around = load_pcm(background)
        for speech in SPEECHES:
            pcm = around + load_pcm(speech) + around
            pcm = pcm[: len(pcm) - len(pcm) % CHUNK_BYTES]
            chunks = tuple(pcm[i : i + CHUNK_BYTES] for i in range(0, len(pcm), CHUNK_BYTES))
            loops.append(AudioLoop(f"{background}+{speech}", chunks))
    return tuple(loops)


def stream_pcm(loop: AudioLoop, phase: int, count: int) -> bytes:
    """The first ``count`` chunks a session sends, starting ``phase`` chunks into its loop."""
    n = len(loop.chunks)
    return b"".join(loop.chunks[(phase + i) % n] for i in range(count))


@cache
def expected_onsets(loop_index: int, phase: int, count: int) -> tuple[int, ...]:
    """``audio_start_ms`` of every ``speech_started`` the server's detector finds in the stream."""
    loop = audio_loops()[loop_index]
    detector = EnergyVad(SAMPLE_RATE, detector_settings())
    events = detector.feed(pcm16(stream_pcm(loop, phase, count)))
    return tuple(e.audio_ms for e in events if e.kind == "speech_started")


def deciding_seq(audio_start_ms: int, min_speech_ms: int) -> int:
    """Seq of the chunk in which the detector decides: it ends at or after start + min_speech."""
    return max(0, math.ceil((audio_start_ms + min_speech_ms) / CHUNK_MS) - 1)


def audio_header(seq: int) -> bytes:
    """The 16-byte header of microphone chunk ``seq`` (stream 0), as the protocol encodes it."""
    return AudioFrame(AudioKind.INPUT, stream_id=0, seq=seq, payload=b"").encode()

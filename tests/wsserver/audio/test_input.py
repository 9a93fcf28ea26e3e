"""Input audio: chunk checks, resend dedup, real-time pacing, VAD turns and manual commits.

The microphone is simulated: fixtures cut into numbered 20 ms frames, each handed
to :class:`AudioInput` with a synthetic ``now`` that advances in real time (or
stands still, for a client that sends too fast).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from protocol.audio_frame import AudioFrame, AudioKind, decode_audio_frame
from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation
from protocol.messages import AudioSettings, TurnDetection
from tests.wsserver.audio.test_vad import SPEECH, load, mix
from wsserver.audio.input import (
    AudioInput,
    AudioInputLimits,
    InputEvent,
    SpeechDiscarded,
    SpeechStarted,
    SpeechStopped,
    TurnCommitted,
    vad_settings,
)
from wsserver.audio.vad import EnergyVad, VadSettings

FRAME_MS = 20
LEAD_MS = 500
"""Background before the speech in every mixed stream."""

IDLE_EXTRA_MS = 200
"""While idle the buffer keeps the padding plus how late a detector may report a start."""


class Mic:
    """A client streaming one session's microphone: numbered frames, a clock."""

    def __init__(
        self,
        rate: int = 16000,
        *,
        manual: bool = False,
        limits: AudioInputLimits | None = None,
        **detection: object,
    ) -> None:
        kind = "manual" if manual else "server_vad"
        self.rate = rate
        self.settings = AudioSettings(
            sample_rate=rate,  # type: ignore[arg-type]
            turn_detection=TurnDetection(type=kind, **detection),  # type: ignore[arg-type]
        )
        detector = None if manual else EnergyVad(rate, vad_settings(self.settings))
        self.input = AudioInput(self.settings, detector, limits or AudioInputLimits(), now=0.0)
        self.seq = 0
        self.now = 0.0

    def frame(self, payload: bytes, *, last: bool = False) -> list[InputEvent]:
        """Send the next chunk now (the clock is not moved)."""
        events = self.input.accept(
            AudioFrame(AudioKind.INPUT, 0, self.seq, payload, last), self.now
        )
        self.seq += 1
        return events

    def stream(self, samples: np.ndarray, *, realtime: bool = True) -> list[InputEvent]:
        """Send ``samples`` as 20 ms frames, the clock moving with the audio."""
        events: list[InputEvent] = []
        for payload in frames(samples, self.rate):
            events += self.frame(payload)
            if realtime:
                self.now += FRAME_MS / 1000
        return events


def frames(samples: np.ndarray, rate: int, ms: int = FRAME_MS) -> list[bytes]:
    """Whole ``ms`` chunks of ``samples`` (a partial tail is left out)."""
    step = rate * ms // 1000
    return [samples[i : i + step].tobytes() for i in range(0, samples.size - step + 1, step)]


def silence(ms: int, rate: int = 16000) -> np.ndarray:
    return np.zeros(rate * ms // 1000, dtype=np.int16)


def speech_stream(name: str, background: str = "silence") -> tuple[np.ndarray, int]:
    """Background, the spoken fixture over it from ``LEAD_MS``, background again."""
    speech, rate = load(name)
    bed, _ = load(background)
    return mix(speech, bed, rate * LEAD_MS // 1000), speech.size * 1000 // rate


def kinds(events: list[InputEvent]) -> list[type]:
    return [type(event) for event in events]


def at_ms(samples: np.ndarray, rate: int, start_ms: int, end_ms: int) -> bytes:
    return samples[rate * start_ms // 1000 : rate * end_ms // 1000].tobytes()


def refused(mic: Mic, payload: bytes, **kw: bool) -> ErrorCode:
    with pytest.raises(ProtocolViolation) as info:
        mic.frame(payload, **kw)
    return info.value.code


# -- server VAD turns ---------------------------------------------------------------


@pytest.mark.parametrize("name", SPEECH)
@pytest.mark.parametrize("background", ["silence", "noise"])
def test_server_vad_commits_the_spoken_turn(name: str, background: str) -> None:
    stream, speech_ms = speech_stream(name, background)
    mic = Mic()
    events = mic.stream(stream)
    assert kinds(events) == [SpeechStarted, SpeechStopped, TurnCommitted]
    started, stopped, turn = events
    assert isinstance(started, SpeechStarted)
    assert isinstance(stopped, SpeechStopped)
    assert isinstance(turn, TurnCommitted)
    assert LEAD_MS - 50 <= started.audio_ms <= LEAD_MS + 150
    assert stopped.speech_ms == stopped.audio_ms - started.audio_ms
    # The turn keeps about prefix_padding_ms from before the onset...
    padding = mic.settings.turn_detection.prefix_padding_ms
    assert abs(started.audio_ms - turn.start_ms - padding) <= VadSettings().min_speech_ms
    # ...holds the whole utterance, and is exactly the audio sent in that span.
    assert turn.start_ms <= LEAD_MS
    assert turn.end_ms >= LEAD_MS + speech_ms
    assert turn.audio == at_ms(stream, mic.rate, turn.start_ms, turn.end_ms)
    assert turn.duration_ms == turn.end_ms - turn.start_ms
    assert mic.input.buffered_ms <= padding + IDLE_EXTRA_MS


@pytest.mark.parametrize("name", ["silence", "noise", "hum"])
def test_no_events_for_silence_and_steady_noise(name: str) -> None:
    samples, _ = load(name)
    mic = Mic()
    assert mic.stream(np.concatenate([samples, samples])) == []
    # Only the prefix padding waits, never the whole stream.
    assert mic.input.buffered_ms <= mic.settings.turn_detection.prefix_padding_ms + IDLE_EXTRA_MS
    assert not mic.input.speaking


def test_without_padding_the_turn_starts_at_the_onset() -> None:
    stream, _ = speech_stream("speech_hello")
    events = Mic(prefix_padding_ms=0).stream(stream)
    started, turn = events[0], events[-1]
    assert isinstance(started, SpeechStarted) and isinstance(turn, TurnCommitted)
    assert turn.start_ms <= started.audio_ms


def test_24khz_input() -> None:
    stream16, speech_ms = speech_stream("speech_weather")
    seconds = stream16.size / 16000
    t24 = np.arange(round(seconds * 24000)) / 24000
    stream = np.interp(t24, np.arange(stream16.size) / 16000, stream16).astype(np.int16)
    mic = Mic(24000)
    events = mic.stream(stream)
    assert kinds(events) == [SpeechStarted, SpeechStopped, TurnCommitted]
    turn = events[-1]
    assert isinstance(turn, TurnCommitted)
    assert turn.start_ms <= LEAD_MS and turn.end_ms >= LEAD_MS + speech_ms
    assert turn.audio == at_ms(stream, 24000, turn.start_ms, turn.end_ms)
    assert len(turn.audio) == turn.duration_ms * 48


def test_a_monologue_past_max_turn_is_cut_into_turns() -> None:
    stream, _ = speech_stream("speech_hello")
    mic = Mic(limits=AudioInputLimits(max_turn_ms=800))
    events = mic.stream(stream)  # never refused: server VAD cuts instead
    turns = [e for e in events if isinstance(e, TurnCommitted)]
    assert kinds(events).count(SpeechStarted) == kinds(events).count(SpeechStopped) == 1
    assert len(turns) >= 3
    assert all(t.duration_ms <= 800 + FRAME_MS for t in turns)
    assert all(t.duration_ms >= 800 for t in turns[:2])
    # Back to back: no audio between the pieces is lost or doubled.
    for before, after in itertools.pairwise(turns):
        assert after.start_ms == before.end_ms
    whole = b"".join(t.audio for t in turns)
    assert whole == at_ms(stream, mic.rate, turns[0].start_ms, turns[-1].end_ms)


def test_a_monologue_cut_leaves_no_turn_of_silence_alone() -> None:
    stream, _ = speech_stream("speech_hello")
    events = Mic(limits=AudioInputLimits(max_turn_ms=800)).stream(stream)
    stopped = next(e for e in events if isinstance(e, SpeechStopped))
    for turn in (e for e in events if isinstance(e, TurnCommitted)):
        assert turn.start_ms < stopped.audio_ms, f"turn {turn.start_ms}-{turn.end_ms} is silence"


def test_a_short_burst_is_discarded_as_a_false_interruption() -> None:
    speech, rate = load("speech_hello")
    burst = speech[rate * 200 // 1000 : rate * 400 // 1000]  # 200 ms from the loud part
    stream = np.concatenate([silence(LEAD_MS), burst, silence(1500)])
    mic = Mic(false_interruption_ms=300)
    events = mic.stream(stream)
    assert kinds(events) == [SpeechStarted, SpeechStopped, SpeechDiscarded]
    discarded = events[-1]
    assert isinstance(discarded, SpeechDiscarded)
    assert discarded.start_ms <= LEAD_MS < discarded.end_ms
    assert mic.input.buffered_ms <= mic.settings.turn_detection.prefix_padding_ms + IDLE_EXTRA_MS
    # Without the setting the same burst is a turn; with it, real speech still is.
    assert kinds(Mic().stream(stream))[-1] is TurnCommitted
    whole, _ = speech_stream("speech_hello")
    assert kinds(Mic(false_interruption_ms=300).stream(whole))[-1] is TurnCommitted


# -- chunk checks ------------------------------------------------------------------


@pytest.mark.parametrize("ms", [9, 101, 0])
def test_chunks_outside_10_to_100_ms_are_invalid(ms: int) -> None:
    mic = Mic(manual=True)
    assert refused(mic, silence(ms).tobytes()) is ErrorCode.INVALID_AUDIO
    assert mic.input.last_seq == -1 and mic.input.received_ms == 0
    for good in (10, 100):
        assert mic.frame(silence(good).tobytes()) == []
    assert mic.input.buffered_ms == 110


def test_chunk_length_follows_the_sample_rate() -> None:
    mic = Mic(24000, manual=True)
    assert mic.frame(silence(10, 24000).tobytes()) == []
    assert refused(mic, silence(9, 24000).tobytes()) is ErrorCode.INVALID_AUDIO
    # 10 ms at 16 kHz is under 7 ms at 24 kHz.
    assert refused(mic, silence(10).tobytes()) is ErrorCode.INVALID_AUDIO


def test_odd_payloads_are_refused_when_the_frame_is_decoded() -> None:
    raw = AudioFrame(AudioKind.INPUT, 0, 0, b"\x00" * 321).encode()
    with pytest.raises(ProtocolViolation) as info:
        decode_audio_frame(raw)
    assert info.value.code is ErrorCode.INVALID_FRAME


def test_output_frames_from_a_client_are_invalid() -> None:
    mic = Mic(manual=True)
    frame = AudioFrame(AudioKind.OUTPUT, 1, 0, silence(20).tobytes())
    with pytest.raises(ProtocolViolation) as info:
        mic.input.accept(frame, 0.0)
    assert info.value.code is ErrorCode.INVALID_FRAME
    assert mic.input.received_ms == 0


def test_resent_chunks_are_ignored() -> None:
    speech, rate = load("speech_stop")
    chunks = frames(speech, rate)[:15]
    mic = Mic(manual=True)
    for payload in chunks[:10]:
        mic.frame(payload)
        mic.now += FRAME_MS / 1000
    mic.seq = 5  # a reconnect: the client re-sends what it is unsure of
    for payload in chunks[5:15]:
        assert mic.frame(payload) == []
        mic.now += FRAME_MS / 1000
    assert mic.input.duplicate_chunks == 5
    assert mic.input.last_seq == 14
    turn = mic.input.commit()
    assert turn.audio == b"".join(chunks)
    assert (turn.start_ms, turn.end_ms) == (0, 15 * FRAME_MS)


# -- real-time pacing ----------------------------------------------------------------


@pytest.mark.parametrize("manual", [True, False])
def test_audio_faster_than_real_time_is_dropped_after_one_error(manual: bool) -> None:
    speech, rate = load("speech_weather")
    five_seconds = np.tile(speech, 3)[: rate * 5]
    mic = Mic(manual=manual)
    limit = mic.input.limits.max_ahead_ms
    errors = []
    for payload in frames(five_seconds, rate):  # all at the same instant
        try:
            mic.frame(payload)
        except ProtocolViolation as violation:
            errors.append(violation)
    assert [e.code for e in errors] == [ErrorCode.AUDIO_TOO_FAST]
    assert errors[0].details == {"chunk_seq": limit // FRAME_MS}
    assert mic.input.received_ms == limit
    assert mic.input.buffered_ms <= limit
    assert mic.input.dropped_chunks == 5000 // FRAME_MS - limit // FRAME_MS
    # Once the clock catches up, chunks are taken again...
    mic.now += 0.5
    assert mic.frame(silence(20).tobytes()) == []
    assert mic.input.received_ms == limit + FRAME_MS
    # ...and a new burst is reported again, once.
    errors = []
    for _ in range(50):
        try:
            mic.frame(silence(20).tobytes())
        except ProtocolViolation as violation:
            errors.append(violation)
    assert [e.code for e in errors] == [ErrorCode.AUDIO_TOO_FAST]


def test_real_time_pace_is_never_refused() -> None:
    speech, rate = load("speech_weather")
    mic = Mic(manual=True)
    mic.stream(np.tile(speech, 3))
    assert mic.input.dropped_chunks == 0
    assert mic.input.buffered_ms == len(frames(np.tile(speech, 3), rate)) * FRAME_MS


# -- manual turns --------------------------------------------------------------------


def test_manual_mode_has_no_vad_events_and_commits_everything() -> None:
    stream, _ = speech_stream("speech_hello")
    mic = Mic(manual=True)
    assert mic.stream(stream) == []
    assert not mic.input.speaking
    sent = b"".join(frames(stream, mic.rate))
    turn = mic.input.commit()
    assert turn.audio == sent
    assert (turn.start_ms, turn.end_ms) == (0, len(sent) // 32)
    with pytest.raises(ProtocolViolation) as info:
        mic.input.commit()
    assert info.value.code is ErrorCode.NOTHING_TO_COMMIT


def test_a_chunk_flagged_last_commits_the_turn() -> None:
    speech, rate = load("speech_stop")
    chunks = frames(speech, rate)[:20]
    mic = Mic(manual=True)
    for payload in chunks[:-1]:
        assert mic.frame(payload) == []
        mic.now += FRAME_MS / 1000
    events = mic.frame(chunks[-1], last=True)
    assert kinds(events) == [TurnCommitted]
    turn = events[0]
    assert isinstance(turn, TurnCommitted)
    assert turn.audio == b"".join(chunks)
    assert mic.input.buffered_ms == 0
    # The next turn starts where this one ended.
    mic.now += FRAME_MS / 1000
    mic.frame(chunks[0])
    assert mic.input.commit().start_ms == turn.end_ms


def test_clear_drops_the_buffered_audio() -> None:
    mic = Mic(manual=True)
    mic.stream(silence(200))
    mic.input.clear()
    assert mic.input.buffered_ms == 0
    with pytest.raises(ProtocolViolation) as info:
        mic.input.commit()
    assert info.value.code is ErrorCode.NOTHING_TO_COMMIT


def test_a_full_manual_buffer_refuses_and_keeps_what_it_took() -> None:
    speech, rate = load("speech_hello")
    chunks = frames(speech, rate)[:60]
    mic = Mic(manual=True, limits=AudioInputLimits(max_turn_ms=1000))
    for payload in chunks[:50]:
        mic.frame(payload)
        mic.now += FRAME_MS / 1000
    mic.seq = 50
    assert refused(mic, chunks[50]) is ErrorCode.AUDIO_BUFFER_FULL
    mic.now += FRAME_MS / 1000
    # Refused again on a resend and after, but reported once until a commit.
    for payload in chunks[50:55]:
        mic.seq = 50
        assert mic.frame(payload) == []
        mic.now += FRAME_MS / 1000
    assert mic.input.dropped_chunks == 6
    turn = mic.input.commit()
    assert turn.audio == b"".join(chunks[:50])
    assert turn.duration_ms == 1000
    # After the commit the refused chunk is welcome.
    mic.seq = 50
    assert mic.frame(chunks[50]) == []
    assert mic.input.commit().audio == chunks[50]

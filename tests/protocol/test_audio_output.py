"""Audio output: merging for a lagging client, binary frames, truncation to what was played."""

from __future__ import annotations

import json

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.audio_frame import (
    audio_event_from_frame,
    is_audio_frame,
    response_stream_id,
    stream_response_id,
)
from protocol.codes import ErrorCode
from protocol.encoding import JsonCodec, MsgpackCodec
from protocol.errors import ProtocolViolation
from protocol.events import (
    AUDIO_DELTA,
    RESPONSE_DONE,
    TEXT_DELTA,
    AudioDelta,
    Event,
    TextDelta,
    event_from_message,
)
from protocol.messages import AudioSettings, TurnDetection
from protocol.outbox import MAX_MERGED_AUDIO_BYTES, Outbox
from protocol.replay import memory_of
from protocol.session import ResponseState, ResponseStatus, ServerSession, SessionLimits
from protocol.snapshot import (
    ConversationSnapshot,
    StreamSnapshot,
    conversation_snapshot,
    restore_session,
    stream_snapshot,
)

RATE = 16000
WORDS = ["one", " two", " three", " four"]
WORD_MS = 100.0


def _pcm(ms: float, mark: int) -> bytes:
    """``ms`` of 16 kHz PCM16 whose every sample is ``mark`` (so order is visible)."""
    return mark.to_bytes(2, "little", signed=True) * round(RATE * ms / 1000)


def _session() -> tuple[ServerSession, ResponseState]:
    session = ServerSession("s1", SessionLimits(), instructions="be brief")
    session.add_user_text("talk to me")
    response = session.begin_response()
    session.next_event()  # response.created
    return session, response


def _speak(session: ServerSession, response: ResponseState, index: int, *, send: bool) -> None:
    """Record word ``index`` with its audio; ``send``: the client keeps up and takes it."""
    session.record_output(response, WORDS[index], 1, _pcm(WORD_MS, index + 1), WORD_MS)
    if send:
        session.number_pending()


def _spoken_session(sent: int) -> tuple[ServerSession, ResponseState]:
    """All of ``WORDS`` generated; only the first ``sent`` words left the outbox."""
    session, response = _session()
    for index in range(len(WORDS)):
        _speak(session, response, index, send=index < sent)
    return session, response


def _done(session: ServerSession) -> dict[str, object]:
    done = [e for e in session.number_pending() if e.type == RESPONSE_DONE]
    assert len(done) == 1
    return done[0].to_message()


# -- outbox -------------------------------------------------------------------


def _pop(outbox: Outbox) -> Event | None:
    """What a writer does: take the next event and freeze a merged delta."""
    event = outbox.pop()
    if isinstance(event, TextDelta | AudioDelta):
        event.seal()
    return event


def _drain(outbox: Outbox) -> list[Event]:
    events = []
    while (event := _pop(outbox)) is not None:
        events.append(event)
    return events


def _text_of(events: list[Event], response_id: str = "resp_1") -> str:
    return "".join(
        e.fields["delta"] for e in events if e.type == TEXT_DELTA and e.response_id == response_id
    )


def _audio_of(events: list[Event], response_id: str = "resp_1") -> bytes:
    return b"".join(
        e.fields["audio"] for e in events if e.type == AUDIO_DELTA and e.response_id == response_id
    )


@pytest.mark.parametrize("pop_every", [0, 2, 3, 5])
def test_lagging_client_gets_all_text_and_audio_in_order(pop_every: int) -> None:
    outbox = Outbox()
    sent: list[Event] = []
    texts, audio = [], []
    for index in range(40):
        text, chunk = f" w{index}", _pcm(20, index)
        texts.append(text)
        audio.append(chunk)
        outbox.push_text("resp_1", text, 1)
        outbox.push_audio("resp_1", 1, chunk, 20.0)
        if pop_every and index % pop_every == 0:
            event = _pop(outbox)  # the writer takes one frame now and then
            assert event is not None
            sent.append(event)
    sent += _drain(outbox)
    assert _text_of(sent) == "".join(texts)
    assert _audio_of(sent) == b"".join(audio)
    durations = [e.fields["duration_ms"] for e in sent if e.type == AUDIO_DELTA]
    assert sum(durations) == pytest.approx(40 * 20.0)
    assert outbox.merged > 0
    assert len(sent) < 80, "a lagging client gets fewer, larger frames"
    assert outbox.nbytes == 0


def test_never_merges_across_responses_or_past_other_events() -> None:
    outbox = Outbox()
    outbox.push_text("resp_1", "a", 1)
    outbox.push_audio("resp_1", 1, _pcm(20, 1), 20.0)
    outbox.push(Event(RESPONSE_DONE, {"response_id": "resp_1"}, response_id="resp_1"))
    outbox.push_text("resp_2", "b", 1)
    outbox.push_audio("resp_2", 2, _pcm(20, 2), 20.0)
    outbox.push(Event("input_audio.speech_started", {"audio_start_ms": 0}))
    outbox.push_audio("resp_2", 2, _pcm(20, 3), 20.0)
    outbox.push_text("resp_2", "c", 1)
    events = _drain(outbox)
    assert [(e.type, e.response_id) for e in events] == [
        (TEXT_DELTA, "resp_1"),
        (AUDIO_DELTA, "resp_1"),
        (RESPONSE_DONE, "resp_1"),
        (TEXT_DELTA, "resp_2"),
        (AUDIO_DELTA, "resp_2"),
        ("input_audio.speech_started", None),
        (AUDIO_DELTA, "resp_2"),
        (TEXT_DELTA, "resp_2"),
    ]
    assert outbox.merged == 0
    assert [e.fields["stream_id"] for e in events if e.type == AUDIO_DELTA] == [1, 2, 2]


def test_merged_audio_is_bounded() -> None:
    outbox = Outbox()
    chunk = _pcm(100, 7)  # 3,200 bytes
    count = MAX_MERGED_AUDIO_BYTES // len(chunk) * 3
    for _ in range(count):
        outbox.push_text("resp_1", " w", 1)
        outbox.push_audio("resp_1", 1, chunk, 100.0)
    events = _drain(outbox)
    sizes = [len(e.fields["audio"]) for e in events if e.type == AUDIO_DELTA]
    assert len(sizes) >= 3
    assert max(sizes) <= MAX_MERGED_AUDIO_BYTES + len(chunk)
    assert sum(sizes) == count * len(chunk)
    assert _text_of(events) == " w" * count


def test_drop_response_drops_text_and_audio_of_that_response_only() -> None:
    outbox = Outbox()
    outbox.push_text("resp_1", "gone", 1)
    outbox.push_audio("resp_1", 1, _pcm(20, 1), 20.0)
    outbox.push_text("resp_1", " too", 1)
    outbox.push(Event("input_audio.speech_started", {"audio_start_ms": 0}))
    outbox.push_audio("resp_1", 1, _pcm(20, 2), 20.0)
    outbox.push_text("resp_2", "kept", 1)
    outbox.push_audio("resp_2", 2, _pcm(20, 3), 20.0)
    assert outbox.drop_response("resp_1") == 2
    remaining = outbox.pending()
    assert [(e.type, e.response_id) for e in remaining] == [
        ("input_audio.speech_started", None),
        (TEXT_DELTA, "resp_2"),
        (AUDIO_DELTA, "resp_2"),
    ]
    assert outbox.nbytes == sum(memory_of(e) for e in remaining)


# -- server session: numbering and sealing --------------------------------------


def test_audio_deltas_are_numbered_without_gaps_and_sealed() -> None:
    session, response = _session()
    events: list[Event] = []
    for index in range(len(WORDS)):
        _speak(session, response, index, send=False)
        events += session.number_pending()
        assert response.audio_sent_ms == pytest.approx((index + 1) * WORD_MS)
    session.end_response(response, ResponseStatus.COMPLETED)
    events += session.number_pending()
    assert [e.seq for e in events] == list(range(2, 2 + len(events)))
    audio = [e for e in events if e.type == AUDIO_DELTA]
    assert [type(e) for e in audio] == [AudioDelta] * len(WORDS)
    for index, event in enumerate(audio):
        message = event.to_message()
        assert message["audio"] == _pcm(WORD_MS, index + 1)
        assert message["duration_ms"] == WORD_MS
        assert message["stream_id"] == response_stream_id(response.id) == 1
    assert [e.seq for e in session.replay_after(1)] == [e.seq for e in events]


def test_a_lagging_client_gets_merged_audio_and_the_same_totals() -> None:
    session, response = _spoken_session(sent=0)
    events = session.number_pending()
    assert [e.seq for e in events] == list(range(2, 2 + len(events)))
    assert _text_of(events) == "".join(WORDS)
    assert _audio_of(events) == b"".join(_pcm(WORD_MS, i + 1) for i in range(len(WORDS)))
    assert len(events) < 2 * len(WORDS)
    assert response.audio_sent_ms == pytest.approx(len(WORDS) * WORD_MS)


# -- encoding -------------------------------------------------------------------


@pytest.mark.parametrize("codec", [JsonCodec(), MsgpackCodec()])
def test_audio_events_travel_as_binary_audio_frames(codec: JsonCodec | MsgpackCodec) -> None:
    session, response = _spoken_session(sent=0)
    audio_events = [e for e in session.number_pending() if e.type == AUDIO_DELTA]
    assert audio_events
    for event in audio_events:
        frame = codec.encode_event(event)
        assert isinstance(frame, bytes) and is_audio_frame(frame)
        assert audio_event_from_frame(frame) == {
            "type": AUDIO_DELTA,
            "seq": event.seq,
            "response_id": response.id,
            "audio": event.fields["audio"],
        }
        # The Redis store keeps events as msgpack'd wire messages and rebuilds them.
        stored = msgpack.packb(event.to_message())
        rebuilt = event_from_message(msgpack.unpackb(stored, raw=False), len(stored))
        assert type(rebuilt) is Event
        assert codec.encode_event(rebuilt) == frame


def test_stream_ids_name_responses() -> None:
    assert response_stream_id("resp_7") == 7
    assert stream_response_id(7) == "resp_7"
    assert stream_response_id(response_stream_id("resp_123")) == "resp_123"


# -- interrupt: keep what was heard --------------------------------------------


@pytest.mark.parametrize(
    ("played_ms", "kept"),
    [
        (0, None),
        (99, None),
        (100, "one"),
        (250, "one two"),
        (399, "one two three"),
        (400, "one two three four"),
    ],
)
def test_interrupt_keeps_only_fully_played_words(played_ms: int, kept: str | None) -> None:
    session, response = _spoken_session(sent=len(WORDS))
    session.end_response(response, ResponseStatus.INTERRUPTED, played_ms=played_ms)
    turns = session.history()
    if kept is None:
        assert turns[-1].role == "user"
    else:
        assert (turns[-1].role, turns[-1].text) == ("assistant", kept)
    assert _done(session)["played_ms"] == played_ms


def test_played_ms_past_the_audio_sent_is_clamped() -> None:
    session, response = _spoken_session(sent=2)
    assert response.audio_sent_ms == pytest.approx(200.0)
    session.end_response(response, ResponseStatus.INTERRUPTED, played_ms=10_000)
    assert session.history()[-1].text == "one two"
    done = _done(session)
    assert (done["played_ms"], done["audio_ms"]) == (200, 200)
    assert response.played_ms == 200


def test_no_playback_report_keeps_the_delivered_text() -> None:
    session, response = _spoken_session(sent=3)
    session.end_response(response, ResponseStatus.INTERRUPTED)
    assert session.history()[-1].text == "one two three"
    done = _done(session)
    assert "played_ms" not in done
    assert done["audio_ms"] == 300


def test_a_report_while_running_is_used_by_the_interrupt() -> None:
    session, response = _spoken_session(sent=4)
    assert session.report_played(response.id, 150) is response
    session.end_response(response, ResponseStatus.INTERRUPTED)
    assert session.history()[-1].text == "one"
    assert _done(session)["played_ms"] == 150


def test_a_late_report_cuts_the_interrupted_turn_again() -> None:
    session, response = _spoken_session(sent=4)
    session.end_response(response, ResponseStatus.INTERRUPTED)
    assert session.history()[-1].text == "one two three four"
    version = session.conversation.version
    session.report_played(response.id, 250)
    assert session.history()[-1].text == "one two"
    assert response.history_text == "one two"
    assert session.conversation.version > version
    # A report past the audio sent is clamped, not an error.
    session.report_played(response.id, 99_999)
    assert response.played_ms == 400


def test_a_late_report_keeps_the_rendered_cap_and_spares_a_turn_in_use() -> None:
    session, response = _spoken_session(sent=4)
    session.end_response(response, ResponseStatus.INTERRUPTED, rendered_chars=8)
    assert session.history()[-1].text == "one two "
    session.report_played(response.id, 400)
    assert session.history()[-1].text == "one two "  # what was shown still caps it
    session.report_played(response.id, 100)
    assert session.history()[-1].text == "one"
    # Once the next answer runs, it was built on the turn as it is: left alone.
    session.add_user_text("next")
    session.begin_response()
    session.report_played(response.id, 0)
    assert session.conversation.turns[1].text == "one"
    assert response.played_ms == 0


def test_a_late_report_does_not_touch_a_completed_turn() -> None:
    session, response = _spoken_session(sent=4)
    session.end_response(response, ResponseStatus.COMPLETED)
    version = session.conversation.version
    session.report_played(response.id, 100)
    assert session.history()[-1].text == "one two three four"
    assert session.conversation.version == version


def test_reports_for_unknown_or_older_responses_are_refused_the_previous_one_is_not() -> None:
    session = ServerSession("s1", SessionLimits())
    with pytest.raises(ProtocolViolation) as info:
        session.report_played("resp_1", 10)
    assert info.value.code is ErrorCode.UNKNOWN_RESPONSE
    session, response = _spoken_session(sent=4)
    session.end_response(response, ResponseStatus.COMPLETED)
    session.add_user_text("and then?")
    session.begin_response()
    for response_id in ["resp_9", "nonsense"]:
        with pytest.raises(ProtocolViolation) as info:
            session.report_played(response_id, 10)
        assert info.value.code is ErrorCode.UNKNOWN_RESPONSE
    assert session.report_played("resp_2", 0).id == "resp_2"
    # The previous answer may still be playing while the next one runs.
    assert session.report_played("resp_1", 10).played_ms == 10
    session.end_response(session.responses["resp_2"], ResponseStatus.COMPLETED)
    session.add_user_text("more")
    session.begin_response()
    with pytest.raises(ProtocolViolation) as info:
        session.report_played("resp_1", 20)
    assert info.value.code is ErrorCode.UNKNOWN_RESPONSE


def test_response_done_reports_audio_and_played_time() -> None:
    session, response = _spoken_session(sent=4)
    session.end_response(response, ResponseStatus.COMPLETED)
    done = _done(session)
    assert done["audio_ms"] == 400
    assert "played_ms" not in done

    text_only = ServerSession("s2", SessionLimits())
    text_only.add_user_text("q")
    plain = text_only.begin_response()
    text_only.record_output(plain, "words", 1)
    text_only.end_response(plain, ResponseStatus.INTERRUPTED, played_ms=10)
    done = _done(text_only)
    assert "audio_ms" not in done and "played_ms" not in done


def test_audio_never_leaves_ahead_of_the_text_it_speaks() -> None:
    session, response = _session()
    for index in range(len(WORDS)):
        _speak(session, response, index, send=False)
        session.next_event()  # the writer takes one frame per word: it lags a little
        heard = response.heard_chars(response.audio_sent_ms)
        assert heard <= len(response.delivered_text())


# -- property: truncation is a prefix, monotonic in played time -------------------


def _interrupted_text(
    tokens: list[tuple[str, int]], sent: int, played_ms: int
) -> tuple[str, str, list[str]]:
    session = ServerSession("s1", SessionLimits())
    session.add_user_text("q")
    response = session.begin_response()
    for index, (text, ms) in enumerate(tokens):
        session.record_output(response, text, 1, _pcm(ms, index), float(ms))
        if index < sent:
            session.number_pending()
    session.end_response(response, ResponseStatus.INTERRUPTED, played_ms=played_ms)
    last = session.history()[-1]
    kept = last.text if last.role == "assistant" else ""
    return kept, response.delivered_text(), [t for t, _ in tokens]


@given(
    tokens=st.lists(
        st.tuples(st.text(min_size=1, max_size=6), st.integers(1, 200)), min_size=1, max_size=12
    ),
    sent_fraction=st.floats(0.0, 1.0),
    played=st.lists(st.integers(0, 3000), min_size=2, max_size=6),
)
def test_kept_text_is_a_prefix_growing_with_played_time(
    tokens: list[tuple[str, int]], sent_fraction: float, played: list[int]
) -> None:
    sent = round(sent_fraction * len(tokens))
    previous = -1
    for played_ms in sorted(played):
        kept, delivered, texts = _interrupted_text(tokens, sent, played_ms)
        assert delivered.startswith(kept)
        assert len(kept) >= previous
        previous = len(kept)
        # Whole tokens only, and only those whose audio was played in full.
        whole = [sum(len(t) for t in texts[:k]) for k in range(len(texts) + 1)]
        assert len(kept) in whole
        spoken = whole.index(len(kept))
        assert sum(ms for _, ms in tokens[:spoken]) <= played_ms


# -- snapshot ---------------------------------------------------------------------


def test_snapshot_keeps_the_audio_settings() -> None:
    settings = AudioSettings(
        sample_rate=24000,
        turn_detection=TurnDetection(silence_duration_ms=700, false_interruption_ms=300),
    )
    session, _ = _spoken_session(sent=4)
    session.audio = settings.model_dump()
    stored = json.loads(json.dumps(conversation_snapshot(session).to_dict()))
    conversation = ConversationSnapshot.from_dict(stored)
    stream = StreamSnapshot.from_dict(json.loads(json.dumps(stream_snapshot(session).to_dict())))
    restored, lost = restore_session(
        "s1", conversation, stream, [], client_last_seq=session.last_seq, partial_text="one two"
    )
    assert lost is not None
    assert restored.audio == session.audio
    assert AudioSettings.model_validate(restored.audio) == settings

    text_only = ServerSession("s2", SessionLimits())
    assert ConversationSnapshot.from_dict(conversation_snapshot(text_only).to_dict()).audio is None

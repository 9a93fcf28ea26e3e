"""What a speech engine heard: the ``input_audio.transcript`` event and the history.

A pipeline engine transcribes the spoken turn before its LLM answers and reports
the words as an output chunk carrying a :class:`~protocol.generation.Transcript`.
Every one (partial or final) becomes an ``input_audio.transcript`` event; the
final one also takes the place of the turn's ``[audio N ms]`` placeholder in the
history, by the rule the engine applies to its prompt
(:func:`protocol.spoken_turns.with_transcript`), so a resume, a takeover and the
next answer all see the words.
"""

from __future__ import annotations

from protocol.events import INPUT_TRANSCRIPT
from protocol.generation import Transcript
from protocol.json_value import safe_text
from protocol.session.actions import CoreActions
from protocol.session.effects import PERSIST
from protocol.session.history import trim_history
from protocol.session.responses import ResponseState
from protocol.spoken_turns import spoken_turn_indexes, with_transcript


def on_transcript(core: CoreActions, response: ResponseState, transcript: Transcript) -> None:
    """A transcript of the turn ``response`` answers: tell the client; the final one stays.

    The caller (``responding.output``) wakes the writer, or numbers the event
    for the shared log when nobody is attached, as for any output.
    """
    if response.done:
        # Raced with the response's end (its engine was aborted): the turn keeps its
        # placeholder, as if nothing had been heard.
        return
    session = core.session
    # Bounded and valid like a typed turn: the engine's words are input too.
    text = safe_text(transcript.text, session.limits.max_input_chars).strip()
    session.push_event(
        INPUT_TRANSCRIPT,
        {"response_id": response.id, "text": text, "final": transcript.final},
    )
    if not transcript.final or not text:
        return
    conversation = session.conversation
    if spoken_turn_indexes(conversation.turns):
        conversation.turns[:] = with_transcript(conversation.turns, text)
        conversation.version += 1
        trim_history(session)
        core.emit(PERSIST)

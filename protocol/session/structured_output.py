"""Structured output: the answer's text parsed as it streams, validated when it ends.

A response created with ``response_format`` gets provisional values
(``response.output_json.delta``) while its text streams, and, when the engine
stops, either its final value (``response.output_json.done``) or a ``failed``
end (``invalid_output``) saying what is wrong.
"""

from __future__ import annotations

from typing import Any

from protocol.events import EVENT_OVERHEAD_BYTES, OUTPUT_JSON_DELTA, Event
from protocol.json_schema import CompiledSchema, compile_schema
from protocol.outbox import Outbox
from protocol.partial_json import PartialJsonError
from protocol.session.responses import ResponseState


def parse_structured_output(outbox: Outbox, response: ResponseState, text: str) -> None:
    """Feed new text to the response's parser; queue the provisional value if it changed."""
    parser = response.output_json
    assert parser is not None
    try:
        parser.feed(text)
    except PartialJsonError:
        response.output_json = None  # reported as invalid_output when it ends
        response.reason = "invalid_output"
        return
    value = parser.value
    if value is not None and value != response.output_json_shown:
        # Only when it changed: a fragment inside a number or between tokens adds nothing.
        response.output_json_shown = value
        fields = {"response_id": response.id, "value": value, "provisional": True}
        # The value is about as large as the text so far: counted, so a client that
        # lags behind structured output meets the outbox bound like any other.
        size = EVENT_OVERHEAD_BYTES + response.generated_chars
        event = Event(OUTPUT_JSON_DELTA, fields, response_id=response.id, size=size)
        outbox.push(event)


def final_output(
    response: ResponseState, compiled: CompiledSchema | None
) -> tuple[Any, str | None]:
    """The answer's final value, or what is wrong with it (``(None, problem)``).

    ``compiled`` is the response's schema compiled when it was created; one that
    is not the response's own schema is compiled again.
    """
    parser = response.output_json
    if parser is None:
        return None, "the output is not valid json"
    try:
        value = parser.finish()
    except PartialJsonError as exc:
        return None, f"the output is not valid json: {exc}"
    if compiled is None or compiled.schema is not response.output_schema:
        assert response.output_schema is not None
        compiled = compile_schema(response.output_schema, "response_format.schema")
    problem = compiled.problem(value)
    if problem is not None:
        return None, f"the output does not match the schema: {problem}"
    return value, None

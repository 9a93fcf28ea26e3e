"""Engine finishes in the core: finish-reason mapping and structured-output validation."""

from __future__ import annotations

import json

import pytest

from protocol.generation import FinishReason
from protocol.session.effects import AbortGeneration
from protocol.session.inputs import GenerationRefused, InternalFailure
from protocol.session.responding import FINISH_STATUS
from tests.protocol.session.drive import Driver, of_type

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}


@pytest.mark.parametrize(
    ("reason", "status", "why"),
    [
        (FinishReason.STOP, "completed", None),
        (FinishReason.LENGTH, "incomplete", "max_output_tokens"),
        (FinishReason.ERROR, "failed", "engine_error"),
        (FinishReason.ABORTED, "cancelled", "engine_aborted"),
        (FinishReason.UPSTREAM_ERROR, "failed", "upstream_error"),
        (FinishReason.UPSTREAM_TIMEOUT, "failed", "upstream_timeout"),
    ],
)
def test_a_finish_reason_ends_the_response_with_its_status(
    reason: FinishReason, status: str, why: str | None
) -> None:
    drive = Driver()
    response = drive.start()
    drive.output(response, "text")
    drive.finish(response, reason)
    (done,) = of_type(drive.read(), "response.done")
    assert (done["status"], done.get("reason")) == (status, why)
    assert drive.session.active is None
    assert FINISH_STATUS[reason][0].value == status


def test_every_finish_reason_has_a_status() -> None:
    assert set(FINISH_STATUS) == set(FinishReason)


def test_a_second_finish_is_ignored() -> None:
    drive = Driver()
    response = drive.start()
    drive.finish(response, FinishReason.STOP)
    assert drive.finish(response, FinishReason.ERROR) == []
    assert len(of_type(drive.read(), "response.done")) == 1


def test_a_refused_request_fails_the_response() -> None:
    drive = Driver()
    drive.send(type="response.create", input="hi")
    drive.feed(GenerationRefused("resp_1", overloaded=True))
    (done,) = of_type(drive.read(), "response.done")
    assert (done["status"], done["reason"]) == ("failed", "engine_overloaded")


def _structured(drive: Driver) -> str:
    return drive.start(response_format={"type": "json_schema", "schema": SCHEMA})


def test_a_structured_answer_that_matches_gets_its_final_value() -> None:
    drive = Driver()
    response = _structured(drive)
    drive.output(response, '{"n": ')
    drive.output(response, "4}")
    drive.finish(response, FinishReason.STOP)
    events = drive.read()
    assert of_type(events, "response.output_json.delta")[-1]["value"] == {"n": 4}
    (final,) = of_type(events, "response.output_json.done")
    assert final["value"] == {"n": 4}
    assert of_type(events, "response.done")[0]["status"] == "completed"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (json.dumps({"n": "four"}), "the output does not match the schema"),
        ('{"n": 4', "the output is not valid json"),
        ("n = 4", "the output is not valid json"),
    ],
)
def test_a_structured_answer_that_does_not_match_fails(text: str, problem: str) -> None:
    drive = Driver()
    response = _structured(drive)
    drive.output(response, text)
    effects = drive.finish(response, FinishReason.STOP)
    assert AbortGeneration() not in effects, "the engine had stopped already"
    events = drive.read()
    assert of_type(events, "response.output_json.done") == []
    (done,) = of_type(events, "response.done")
    assert (done["status"], done["reason"]) == ("failed", "invalid_output")
    assert done["error"]["message"].startswith(problem)


def test_an_internal_failure_still_ends_the_response_once() -> None:
    drive = Driver()
    response = drive.start()
    effects = drive.feed(InternalFailure(response))
    assert AbortGeneration() in effects
    (done,) = of_type(drive.read(), "response.done")
    assert (done["status"], done["reason"]) == ("failed", "internal_error")
    drive.feed(InternalFailure(response))
    assert of_type(drive.read(), "response.done") == []
    assert drive.session.active is None

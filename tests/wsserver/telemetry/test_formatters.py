"""The line formats, in process: ids from the context, one line per record whatever it
holds (newlines, controls, invalid Unicode, megabytes), and never a secret."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from wsserver.frontdoor.redaction import _PATTERNS, redact
from wsserver.telemetry import bind_session, configure_logging, response_context
from wsserver.telemetry.formatters import FIELDS_ATTRIBUTE
from wsserver.telemetry.logging_setup import resolve_format
from wsserver.telemetry.sanitize import _MAYBE_SECRET, MAX_MESSAGE_CHARS, register_secret

SECRETS = {
    "api key": "wsk_" + "A1b2" * 11,
    "client token": "wct_eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXBhcnQ",
    "resume token": "wrt_" + "Zz9_" * 10,
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYXJvbCJ9.c2lnbmF0dXJl",
    "upstream key": "upstream-Secret-7f3a9c2e1b",
}


@pytest.fixture
def output() -> Iterator[tuple[logging.Logger, io.StringIO, io.StringIO]]:
    """A logger writing JSON lines to one stream and the human format to another."""
    json_out, human_out = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    assert configure_logging("DEBUG", "json", json_out) == "json"
    json_handler = root.handlers[0]
    assert configure_logging("DEBUG", "human", human_out) == "human"
    root.addHandler(json_handler)
    try:
        yield logging.getLogger("tests.telemetry"), json_out, human_out
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def lines_of(stream: io.StringIO) -> list[str]:
    """The lines of the test's logger (asyncio logs at debug level too)."""
    return [x for x in stream.getvalue().splitlines() if "tests.telemetry" in x]


def test_a_json_line_has_the_common_fields(
    output: tuple[logging.Logger, io.StringIO, io.StringIO],
) -> None:
    logger, json_out, human_out = output
    logger.info("hello %s", "world", extra={FIELDS_ATTRIBUTE: {"status": "completed", "n": 3}})
    (line,) = lines_of(json_out)
    record = json.loads(line)
    assert record["message"] == "hello world"
    assert record["level"] == "INFO" and record["logger"] == "tests.telemetry"
    assert record["ts"].endswith("+00:00") and record["status"] == "completed" and record["n"] == 3
    (human,) = lines_of(human_out)
    assert "INFO tests.telemetry: hello world status=completed n=3" in human


async def test_ids_come_from_the_context_of_the_task(
    output: tuple[logging.Logger, io.StringIO, io.StringIO],
) -> None:
    logger, json_out, human_out = output

    async def session_task() -> None:
        bind_session("sess_abc")
        logger.warning("in the session")
        # What runs in a response's context (an engine request's task) names both.
        response_context("sess_abc", "resp_1").run(logger.warning, "in the response")
        logger.warning("the session again")

    await asyncio.create_task(session_task())
    logger.warning("outside")
    records = [json.loads(line) for line in lines_of(json_out)]
    assert [(r.get("session_id"), r.get("response_id")) for r in records] == [
        ("sess_abc", None),
        ("sess_abc", "resp_1"),
        ("sess_abc", None),
        (None, None),
    ]
    assert "[sess_abc/resp_1]: in the response" in lines_of(human_out)[1]


HOSTILE = [
    'answer\n{"ts":"x","level":"ERROR","message":"forged"}',
    "line one\r\n2026-12-01 00:00:00 ERROR wsserver: forged",
    "sep\u2028arator\u2029 and \x85 next line",
    "\x1b[2J\x1b[31mred\x00nul\x7f",
    "lone \ud800 surrogate \udfff",
]


@pytest.mark.parametrize("text", HOSTILE, ids=[ascii(text)[:40] for text in HOSTILE])
def test_hostile_text_stays_on_one_line(
    output: tuple[logging.Logger, io.StringIO, io.StringIO], text: str
) -> None:
    logger, json_out, human_out = output
    record = logger.makeRecord(
        logger.name, logging.INFO, __file__, 0, "client said %s", (text,), None,
        extra={FIELDS_ATTRIBUTE: {"reason": text, text: 1}},
    )  # fmt: skip
    # Straight to the handlers: pytest's own log capture would carry the lone surrogate
    # into its report, which a pytest-xdist worker cannot send.
    for handler in logging.getLogger().handlers:
        if handler.stream in (json_out, human_out):  # type: ignore[attr-defined]
            handler.handle(record)
    (line,) = lines_of(json_out)
    record = json.loads(line)
    assert record["message"].startswith("client said ")
    assert record["level"] == "INFO"
    line.encode("ascii")  # JSON lines are ASCII: no viewer splits them
    (human,) = lines_of(human_out)
    assert human.count(" INFO tests.telemetry: client said ") == 1
    human.encode("utf-8")  # no lone surrogate reaches the stream
    for char in "\x1b\x00\x7f\u2028\u2029\x85":
        assert char not in human


def test_a_huge_message_and_field_are_bounded(
    output: tuple[logging.Logger, io.StringIO, io.StringIO],
) -> None:
    logger, json_out, human_out = output
    huge = "x" * 1_000_000
    logger.error(huge, extra={FIELDS_ATTRIBUTE: {"reason": huge, "many": list(range(100_000))}})
    (line,) = lines_of(json_out)
    assert len(line) < 4 * MAX_MESSAGE_CHARS
    record = json.loads(line)
    assert record["message"].endswith("more chars]")
    assert len(human_out.getvalue()) < 4 * MAX_MESSAGE_CHARS


def test_no_secret_reaches_either_format(
    output: tuple[logging.Logger, io.StringIO, io.StringIO],
) -> None:
    logger, json_out, human_out = output
    register_secret(SECRETS["upstream key"])
    for name, secret in SECRETS.items():
        logger.info("%s: %s", name, secret)
        logger.info(f"inline Bearer {secret} and resume_token={secret}")
        logger.info("fields", extra={FIELDS_ATTRIBUTE: {"detail": f"key {secret}", secret: 1}})
        try:
            raise ValueError(f"upstream refused {secret}")
        except ValueError:
            logger.exception("with a traceback")
        # Cut at the size bound: the tail of a secret must not survive either.
        logger.info("x" * (MAX_MESSAGE_CHARS - len(secret) + 3) + " " + secret)
    for stream in (json_out, human_out):
        text = stream.getvalue()
        assert "[redacted]" in text and "Traceback" in text
        for name, secret in SECRETS.items():
            assert secret not in text, name
            assert secret[4:-4] not in text, name


def test_auto_is_human_on_a_terminal_and_json_otherwise() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert resolve_format("auto", Terminal()) == "human"
    assert resolve_format("auto", io.StringIO()) == "json"
    assert resolve_format("json", Terminal()) == "json"


def test_a_self_containing_field_is_cut_at_a_depth(
    output: tuple[logging.Logger, io.StringIO, io.StringIO],
) -> None:
    logger, json_out, human_out = output
    loop: dict[str, object] = {}
    loop["again"] = loop
    logger.info("nested", extra={FIELDS_ATTRIBUTE: {"loop": loop}})
    (line,) = lines_of(json_out)
    deepest = json.loads(line)["loop"]["again"]["again"]["again"]["again"]
    assert isinstance(deepest, str) and deepest.startswith("{'again': {")
    assert len(lines_of(human_out)) == 1


def test_the_quick_check_finds_whatever_redaction_would_change() -> None:
    # clean() runs the redaction patterns only where the quick search finds a hint.
    prefixed = [v for k, v in SECRETS.items() if k != "upstream key"]
    samples = [*prefixed, "Authorization: BEARER abc.def", '{"resume_token": "xyz"}']
    samples.append("wsserver.token.abc")
    for text in samples:
        assert redact(text) != text
        assert _MAYBE_SECRET.search(text), text
    # A pattern added to the redaction needs its hint here too.
    for pattern, _ in _PATTERNS:
        assert _MAYBE_SECRET.search(pattern.pattern.replace("\\", "")), pattern.pattern

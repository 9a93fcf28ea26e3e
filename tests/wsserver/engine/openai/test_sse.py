"""The SSE parser: events out of bytes however they are cut, and its bounds."""

from __future__ import annotations

import pytest

from tests.wsserver.engine.openai.standin import recorded
from wsserver.engine.openai.errors import UpstreamProtocolError
from wsserver.engine.openai.sse import SSEParser


def _all(parser: SSEParser, data: bytes, step: int) -> list[str]:
    events: list[str] = []
    for start in range(0, len(data), step):
        events += parser.feed(data[start : start + step])
    return events + parser.close()


@pytest.mark.parametrize("step", [1, 7, 4096, 1 << 20])
def test_a_recorded_stream_gives_the_same_events_however_it_is_cut(step: int) -> None:
    data = recorded("llamacpp_text.sse")
    events = _all(SSEParser(), data, step)
    assert len(events) == 11
    assert events[-1] == "[DONE]"
    assert events[0].startswith('{"choices"')


def test_comments_fields_crlf_and_multiline_data() -> None:
    data = b": ping\r\nevent: x\r\nid: 3\r\ndata: a\r\ndata:b\r\n\r\ndata: c\n\n"
    assert _all(SSEParser(), data, 3) == ["a\nb", "c"]


def test_an_event_without_its_blank_line_counts_at_the_end() -> None:
    assert _all(SSEParser(), b"data: [DONE]", 5) == ["[DONE]"]


def test_a_line_that_never_ends_is_refused_at_the_bound() -> None:
    parser = SSEParser(max_line_bytes=1000)
    with pytest.raises(UpstreamProtocolError, match="line longer than 1000"):
        for _ in range(100):
            parser.feed(b"data: " + b"x" * 100)


def test_a_long_line_in_one_piece_is_refused() -> None:
    with pytest.raises(UpstreamProtocolError, match="line longer"):
        SSEParser(max_line_bytes=1000).feed(b"data: " + b"x" * 2000 + b"\n\n")


def test_an_event_of_many_lines_is_bounded_too() -> None:
    parser = SSEParser(max_line_bytes=1000)
    with pytest.raises(UpstreamProtocolError, match="event longer"):
        parser.feed(b"data: " + b"x" * 600 + b"\n" + b"data: " + b"y" * 600 + b"\n")


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(UpstreamProtocolError, match="not utf-8"):
        SSEParser().feed(b'data: {"x": "\xff\xfe"}\n\n')

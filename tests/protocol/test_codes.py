from __future__ import annotations

import pytest

from protocol.codes import CLOSE_CODES, ERROR_CODES, CloseCode, Disposition, close_disposition


def test_every_close_code_has_a_disposition_and_description() -> None:
    for code, info in CLOSE_CODES.items():
        assert info.code == code
        assert info.description
        assert isinstance(info.disposition, Disposition)


def test_every_error_code_has_a_disposition_and_description() -> None:
    for code, info in ERROR_CODES.items():
        assert info.code == code
        assert info.description


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (None, Disposition.RESUME),
        (CloseCode.NORMAL, Disposition.TERMINAL),
        (CloseCode.ABNORMAL, Disposition.RESUME),
        (CloseCode.SLOW_CONSUMER, Disposition.RESUME),
        (CloseCode.SERVICE_RESTART, Disposition.RESUME),
        (CloseCode.MESSAGE_TOO_BIG, Disposition.TERMINAL),
        (CloseCode.SESSION_REPLACED, Disposition.TERMINAL),
        (1002, Disposition.TERMINAL),
        (4999, Disposition.RESUME),
    ],
)
def test_close_disposition(code: int | None, expected: Disposition) -> None:
    assert close_disposition(code) is expected

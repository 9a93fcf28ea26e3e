"""The token bucket (pure: time is passed in)."""

from __future__ import annotations

from wsserver.frontdoor.token_bucket import TokenBucket


def test_a_burst_then_the_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=3, now=0.0)
    assert [bucket.take(0.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.retry_after(0.0) == 0.5
    assert bucket.take(0.5) and not bucket.take(0.5)
    assert not bucket.full(0.5)
    assert bucket.full(2.0) and bucket.retry_after(2.0) == 0.0


def test_a_refund_gives_one_back_up_to_the_burst() -> None:
    bucket = TokenBucket(rate=0.0, burst=2, now=0.0)
    assert bucket.take(0.0) and bucket.take(0.0) and not bucket.take(0.0)
    bucket.refund()
    assert bucket.take(0.0)
    bucket.refund()
    bucket.refund()
    bucket.refund()
    assert [bucket.take(0.0) for _ in range(3)] == [True, True, False]
    assert bucket.retry_after(0.0) == float("inf")


def test_a_clock_going_backwards_adds_nothing() -> None:
    bucket = TokenBucket(rate=1.0, burst=1, now=10.0)
    assert bucket.take(10.0)
    assert not bucket.take(5.0)
    assert not bucket.take(10.5)
    assert bucket.take(11.0)

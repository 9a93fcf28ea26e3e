"""Quota tables: bounded whatever keys arrive, exact counts, no event loop."""

from __future__ import annotations

import ipaddress

import pytest

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation, ResumeRefused
from wsserver.frontdoor.quotas import ConnectionQuota, QuotaLimits, Quotas, Refusal
from wsserver.frontdoor.tables import ClientTable


class Clock:
    """Time that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def quotas(clock: Clock, live: set[str] | None = None, **limits: object) -> Quotas:
    alive = live if live is not None else set()
    return Quotas(QuotaLimits(**limits), alive.__contains__, clock)  # type: ignore[arg-type]


def connected(q: Quotas, address: str, principal: str | None = None) -> ConnectionQuota:
    quota = q.connect(q.client(address, principal))
    assert isinstance(quota, ConnectionQuota)
    return quota


def test_a_table_stays_bounded_under_many_keys() -> None:
    table = ClientTable(1000, lambda _: False)
    for n in range(200_000):
        table.get(f"k{n}", 0.0)
    assert len(table) <= 1000
    assert table.evicted >= 199_000


def test_busy_entries_are_kept_and_idle_ones_make_room() -> None:
    table = ClientTable(100, lambda _: False)
    held = []
    for n in range(50):
        state = table.get(f"busy{n}", 0.0)
        state.connections = 1  # as Quotas.connect does, before the next operation
        held.append(state)
    for n in range(100_000):
        table.get(f"idle{n}", 0.0)
    assert all(f"busy{n}" in table for n in range(50))
    assert len(table) <= 100 + 50
    # Once they let go, they are forgotten like the others.
    for state in held:
        state.connections = 0
    for n in range(1000):
        table.get(f"later{n}", 0.0)
    assert not any(f"busy{n}" in table for n in range(50))


def test_an_entry_with_live_sessions_is_busy() -> None:
    live = {"s1"}
    table = ClientTable(10, live.__contains__)
    table.get("holder", 0.0).sessions.update({"s1", "s0"})
    for n in range(1000):
        table.get(f"k{n}", 0.0)
    state = table.peek("holder")
    assert state is not None and state.sessions == {"s1"}  # the ended one was pruned
    live.clear()
    for n in range(100):
        table.get(f"j{n}", 0.0)
    assert "holder" not in table


def test_settled_entries_go_without_pressure() -> None:
    clock = Clock()
    q = quotas(clock, handshake_burst_per_ip=5, handshakes_per_second_per_ip=1.0)
    for n in range(20):
        assert q.handshake(q.client(f"198.51.100.{n}", None)) is None
    assert len(q.by_ip) == 20
    clock.now += 10  # every bucket full again: nothing left to remember
    q.handshake(q.client("203.0.113.1", None))
    q.handshake(q.client("203.0.113.2", None))
    assert len(q.by_ip) < 20


def test_many_distinct_addresses_stay_bounded() -> None:
    clock = Clock()
    q = quotas(clock, table_size=500, handshake_burst_per_ip=5, handshakes_per_second_per_ip=1.0)
    base = int(ipaddress.IPv4Address("10.0.0.0"))
    for n in range(50_000):
        q.handshake(q.client(str(ipaddress.IPv4Address(base + n)), None))
    assert len(q.by_ip) <= 500 and len(q.by_principal) <= 500
    # An attacker with a /48 has 65536 /64s to rotate through.
    for n in range(50_000):
        q.handshake(q.client(f"2001:db8:7:{n:x}::1", None))
    assert len(q.by_ip) <= 500 and len(q.by_principal) <= 500


def test_rotating_ipv6_addresses_in_one_network_count_as_one() -> None:
    clock = Clock()
    q = quotas(clock, handshake_burst_per_ip=10, handshakes_per_second_per_ip=0.001)
    verdicts = [q.handshake(q.client(f"2001:db8:1:2::{n:x}", None)) for n in range(1, 50)]
    assert verdicts[:10] == [None] * 10
    assert all(isinstance(v, Refusal) and v.code == "handshake_rate_limited" for v in verdicts[10:])
    assert len(q.by_ip) == 1
    # Another /64 is another client; rotating /64s is bounded by the table.
    assert q.handshake(q.client("2001:db8:1:3::1", None)) is None


def test_the_anonymous_principal_is_the_address_and_named_ones_are_their_own() -> None:
    q = quotas(Clock(), exempt=(ipaddress.ip_network("127.0.0.0/8"),))
    assert q.client("198.51.100.7", None).principal_key == "anonymous@198.51.100.7"
    exempt = q.client("127.0.0.1", None)
    assert (exempt.ip_key, exempt.principal_key) == (None, None)
    named = q.client("127.0.0.1", "acme")
    assert (named.ip_key, named.principal_key) == (None, "acme")


def test_connections_per_principal_across_addresses() -> None:
    q = quotas(Clock(), connections_per_principal=2, connections_per_ip=10)
    held = [connected(q, "198.51.100.1", "acme"), connected(q, "198.51.100.2", "acme")]
    refused = q.handshake(q.client("198.51.100.3", "acme"))
    assert isinstance(refused, Refusal) and refused.code == "connection_limit_reached"
    assert isinstance(q.connect(q.client("198.51.100.3", "acme")), Refusal)
    assert q.handshake(q.client("198.51.100.3", "other")) is None
    held[0].release()
    held[0].release()  # idempotent
    assert q.handshake(q.client("198.51.100.3", "acme")) is None


def test_concurrent_session_starts_cannot_overshoot() -> None:
    live: set[str] = set()
    q = quotas(Clock(), live, sessions_per_principal=2)
    quota = connected(q, "198.51.100.1", "acme")
    with quota.session_slot() as first, quota.session_slot() as second:
        # Both still waiting for the store: a third start must wait for them.
        with pytest.raises(ProtocolViolation) as refused, quota.session_slot():
            pass
        assert refused.value.code is ErrorCode.SESSION_LIMIT_REACHED
        first.session_id, second.session_id = "s1", "s2"
        live.update({"s1", "s2"})
    with pytest.raises(ProtocolViolation), quota.session_slot():
        pass
    live.discard("s1")  # ended
    with quota.session_slot() as slot:
        slot.session_id = "s3"
    # A start that failed (store down) frees its slot.
    live.add("s3")
    live.discard("s2")
    with pytest.raises(RuntimeError), quota.session_slot():
        raise RuntimeError("store unavailable")
    with quota.session_slot():
        pass


def test_a_resumed_session_moves_to_its_new_address() -> None:
    live = {"s1"}
    q = quotas(Clock(), live, sessions_per_ip=1)
    home = connected(q, "198.51.100.1")
    with home.session_slot() as slot:
        slot.session_id = "s1"
    phone = connected(q, "203.0.113.9")
    with phone.resume_attempt("s1"):
        pass
    # Counted at the new address, no longer at the old one.
    with home.session_slot():
        pass
    with pytest.raises(ProtocolViolation), phone.session_slot():
        pass


def test_failed_resumes_refill_over_time() -> None:
    clock = Clock()
    q = quotas(clock, failed_resume_burst=3, failed_resumes_per_minute=6.0)  # one per 10 s
    quota = connected(q, "198.51.100.1", "acme")

    def guess() -> str:
        try:
            with quota.resume_attempt("sess_x"):
                raise ResumeRefused(ErrorCode.INVALID_RESUME_TOKEN, "resume token does not match")
        except ProtocolViolation as refusal:
            return refusal.code.value

    assert [guess() for _ in range(5)] == ["invalid_resume_token"] * 3 + [
        "too_many_failed_resumes"
    ] * 2
    clock.now += 10
    assert [guess(), guess()] == ["invalid_resume_token", "too_many_failed_resumes"]
    # The principal is locked out from any address; another principal is not.
    elsewhere = connected(q, "203.0.113.5", "acme")
    with pytest.raises(ProtocolViolation) as refused, elsewhere.resume_attempt("s"):
        pass
    assert refused.value.code is ErrorCode.TOO_MANY_FAILED_RESUMES
    assert refused.value.details is not None and refused.value.details["retry_after_ms"] > 0
    with connected(q, "203.0.113.6", "other").resume_attempt("s"):
        pass


def test_no_limits_count_nothing() -> None:
    q = quotas(Clock())
    quota = connected(q, "198.51.100.1")
    assert q.handshake(q.client("198.51.100.1", None)) is None
    assert all(quota.message() == 0 for _ in range(10_000))

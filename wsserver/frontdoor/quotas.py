"""Quotas and rates per client address and per principal.

Each client is counted twice: by its address (IPv4, or IPv6 network) and by its
principal — the authenticated identity, or, for an anonymous client, its address
(``anonymous@ADDRESS``). Addresses in the exempt networks (loopback by default:
the demo, the benchmarks) are not counted by address, and neither is their
anonymous principal; a named principal is always counted.

What is limited, and how it is refused:

============================== =========================================================
concurrent connections         handshake: HTTP 429 ``connection_limit_reached``; a race
                               past the check: close 4011
handshakes per second (IP)     HTTP 429 ``handshake_rate_limited``
concurrent sessions            ``session.start``: error ``session_limit_reached``
messages per second            close 4010 ``rate_limited`` (principal, all connections)
failed resumes                 ``session.resume``: error ``too_many_failed_resumes``
============================== =========================================================

A failed resume is a ``session.resume`` answered ``unknown_session`` or
``invalid_resume_token``: a guess. Every resume takes a token from the failed-resume
buckets of its address and principal before it is checked, and a resume that was
not a wrong guess gives it back — so at most ``burst`` guesses are ever in flight,
however many connections send them, and then one per refill interval.

Limits are per worker: each worker counts what it hosts. A value of 0 means no limit.
"""

from __future__ import annotations

import math
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from protocol.codes import ErrorCode
from protocol.errors import ProtocolViolation, ResumeRefused
from wsserver.frontdoor.addresses import Network, address_key, in_networks, parse_address
from wsserver.frontdoor.tables import ClientState, ClientTable
from wsserver.frontdoor.token_bucket import TokenBucket

CONNECTION_LIMIT = "connection_limit_reached"
HANDSHAKE_RATE = "handshake_rate_limited"
_GUESSES = frozenset({ErrorCode.UNKNOWN_SESSION, ErrorCode.INVALID_RESUME_TOKEN})
_MAX_WAIT = 86_400.0
"""The longest wait ever announced (a bucket with no refill would say forever)."""


def milliseconds(seconds: float) -> int:
    """A wait in whole milliseconds, rounded up and capped at a day."""
    return math.ceil(min(seconds, _MAX_WAIT) * 1000)


@dataclass(frozen=True, slots=True)
class QuotaLimits:
    """The limits of :class:`Quotas` (0: no limit)."""

    sessions_per_principal: int = 0
    sessions_per_ip: int = 0
    connections_per_principal: int = 0
    connections_per_ip: int = 0
    handshakes_per_second_per_ip: float = 0.0
    handshake_burst_per_ip: int = 0
    messages_per_second_per_principal: float = 0.0
    message_burst_per_principal: int = 0
    failed_resumes_per_minute: float = 0.0
    failed_resume_burst: int = 0
    table_size: int = 100_000
    """Idle entries kept per table (by address, by principal); busy ones are kept too."""
    ipv6_prefix: int = 64
    exempt: tuple[Network, ...] = ()


@dataclass(frozen=True, slots=True)
class Refusal:
    """A handshake refused before the upgrade: an HTTP status and a JSON body."""

    status: HTTPStatus
    code: str
    message: str
    retry_after: float = 0.0
    """Seconds until trying again can succeed (0: not a matter of time)."""

    @property
    def retry_after_header(self) -> int:
        """``Retry-After`` in whole seconds, never 0 (clients would retry at once)."""
        return max(1, math.ceil(min(self.retry_after, _MAX_WAIT)))

    def body(self) -> dict[str, Any]:
        """The JSON body of the HTTP response."""
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.retry_after:
            body["retry_after_ms"] = milliseconds(self.retry_after)
        return body


@dataclass(frozen=True, slots=True)
class Client:
    """Who is connecting, as the quotas count it."""

    address: str
    ip_key: str | None
    """The per-address key; ``None`` when the address is exempt."""
    principal_key: str | None
    """The per-principal key; ``None`` for an anonymous client from an exempt address."""


@dataclass(slots=True)
class SessionSlot:
    """A ``session.start`` admitted under the session quota; name the session it made."""

    session_id: str | None = None


class Quotas:
    """The quota tables of one worker or router."""

    def __init__(
        self,
        limits: QuotaLimits,
        live: Callable[[str], bool] = lambda _: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.clock = clock
        self._live = live
        self.by_ip = ClientTable(limits.table_size, live)
        self.by_principal = ClientTable(limits.table_size, live)
        self._holders: OrderedDict[str, tuple[ClientState | None, ClientState | None]] = (
            OrderedDict()
        )
        """Which states count each session, so a resume from elsewhere moves it."""
        self.refused: Counter[str] = Counter()
        """Refusals so far, by code."""
        self._unlimited = ConnectionQuota(self, Client("", None, None), None, None)

    def client(self, address: str, principal: str | None) -> Client:
        """Key a client by its address and (authenticated, or ``None``) principal."""
        exempt = in_networks(parse_address(address), self.limits.exempt)
        ip_key = None if exempt else address_key(address, self.limits.ipv6_prefix)
        if principal is not None:
            principal_key: str | None = principal
        else:
            principal_key = None if ip_key is None else f"anonymous@{ip_key}"
        return Client(address, ip_key, principal_key)

    def _states(self, client: Client) -> tuple[ClientState | None, ClientState | None]:
        now = self.clock()
        ip = self.by_ip.get(client.ip_key, now) if client.ip_key is not None else None
        principal = (
            self.by_principal.get(client.principal_key, now)
            if client.principal_key is not None
            else None
        )
        return ip, principal

    # -- handshakes and connections ------------------------------------------

    def handshake(self, client: Client) -> Refusal | None:
        """Count a handshake; a refusal if the address is too fast or holds too much."""
        limits = self.limits
        now = self.clock()
        ip, principal = self._states(client)
        if ip is not None and limits.handshake_burst_per_ip:
            if ip.handshakes is None:
                ip.handshakes = TokenBucket(
                    limits.handshakes_per_second_per_ip, limits.handshake_burst_per_ip, now
                )
            if not ip.handshakes.take(now):
                return self._refuse(
                    HTTPStatus.TOO_MANY_REQUESTS,
                    HANDSHAKE_RATE,
                    "too many handshakes from this address",
                    ip.handshakes.retry_after(now),
                )
        return self._connection_refusal(ip, principal)

    def _connection_refusal(
        self, ip: ClientState | None, principal: ClientState | None
    ) -> Refusal | None:
        limits = self.limits
        for state, limit, whom in (
            (ip, limits.connections_per_ip, "address"),
            (principal, limits.connections_per_principal, "principal"),
        ):
            if state is not None and limit and state.connections >= limit:
                return self._refuse(
                    HTTPStatus.TOO_MANY_REQUESTS,
                    CONNECTION_LIMIT,
                    f"this {whom} already holds {state.connections} connections",
                    1.0,
                )
        return None

    def connect(self, client: Client) -> ConnectionQuota | Refusal:
        """Count a connection that completed its handshake (or refuse it: a race)."""
        ip, principal = self._states(client)
        refusal = self._connection_refusal(ip, principal)
        if refusal is not None:
            return refusal
        for state in (ip, principal):
            if state is not None:
                state.connections += 1
        return ConnectionQuota(self, client, ip, principal)

    def unlimited(self) -> ConnectionQuota:
        """A quota that counts nothing (a connection not counted yet); shared."""
        return self._unlimited

    def _refuse(self, status: HTTPStatus, code: str, message: str, after: float) -> Refusal:
        self.refused[code] += 1
        return Refusal(status, code, message, after)

    # -- sessions --------------------------------------------------------------

    def _hold(self, session_id: str, ip: ClientState | None, principal: ClientState | None) -> None:
        """Count ``session_id`` for these states (and no longer for its previous ones)."""
        holders = self._holders
        previous = holders.pop(session_id, None)
        if previous is not None:
            for state in previous:
                if state is not None:
                    state.sessions.discard(session_id)
        for state in (ip, principal):
            if state is not None:
                state.sessions.add(session_id)
        if ip is not None or principal is not None:
            holders[session_id] = (ip, principal)
        # Amortized pruning of ended sessions, oldest first.
        for _ in range(2):
            oldest = next(iter(holders), None)
            if oldest is None or oldest == session_id:
                break
            if self._live(oldest):
                holders.move_to_end(oldest)
            else:
                del holders[oldest]

    def stats(self) -> dict[str, Any]:
        """Table sizes and refusals, for ``/stats``."""
        return {
            "addresses": len(self.by_ip),
            "principals": len(self.by_principal),
            "evicted": self.by_ip.evicted + self.by_principal.evicted,
            "refused": dict(self.refused),
        }


class ConnectionQuota:
    """One connection's share of its address's and principal's quotas."""

    __slots__ = ("_released", "client", "ip", "principal", "quotas")

    def __init__(
        self,
        quotas: Quotas,
        client: Client,
        ip: ClientState | None,
        principal: ClientState | None,
    ) -> None:
        self.quotas = quotas
        self.client = client
        self.ip = ip
        self.principal = principal
        self._released = False

    def release(self) -> None:
        """The connection ended (idempotent)."""
        if self._released:
            return
        self._released = True
        for state in (self.ip, self.principal):
            if state is not None:
                state.connections -= 1

    def message(self) -> int:
        """Count an inbound message; 0 if allowed, else milliseconds until one would be."""
        principal = self.principal
        limits = self.quotas.limits
        if principal is None or not limits.message_burst_per_principal:
            return 0
        now = self.quotas.clock()
        bucket = principal.messages
        if bucket is None:
            bucket = principal.messages = TokenBucket(
                limits.messages_per_second_per_principal, limits.message_burst_per_principal, now
            )
        if bucket.take(now):
            return 0
        self.quotas.refused["rate_limited"] += 1
        return max(1, milliseconds(bucket.retry_after(now)))

    @contextmanager
    def session_slot(self) -> Iterator[SessionSlot]:
        """Admit a ``session.start``: raises ``session_limit_reached`` when over quota.

        Set the slot's ``session_id`` once the session exists; the slot counts as a
        session while it is open, so concurrent starts cannot overshoot.
        """
        quotas, limits = self.quotas, self.quotas.limits
        for state, limit, whom in (
            (self.ip, limits.sessions_per_ip, "address"),
            (self.principal, limits.sessions_per_principal, "principal"),
        ):
            if state is None or not limit:
                continue
            held = state.live_sessions(quotas._live) + state.opening
            if held >= limit:
                quotas.refused[ErrorCode.SESSION_LIMIT_REACHED.value] += 1
                raise ProtocolViolation(
                    ErrorCode.SESSION_LIMIT_REACHED,
                    f"this {whom} already has {held} sessions on this worker (limit {limit})",
                    details={"limit": limit},
                )
        states = [s for s in (self.ip, self.principal) if s is not None]
        for state in states:
            state.opening += 1
        slot = SessionSlot()
        try:
            yield slot
        finally:
            for state in states:
                state.opening -= 1
            if slot.session_id is not None:
                quotas._hold(slot.session_id, self.ip, self.principal)

    @contextmanager
    def resume_attempt(self, session_id: str) -> Iterator[None]:
        """Admit a ``session.resume``: raises ``too_many_failed_resumes`` when locked out.

        Wrong guesses (``unknown_session``, ``invalid_resume_token``) raised inside keep
        their token; anything else gives it back. A success counts ``session_id`` as
        this connection's session.
        """
        quotas, limits = self.quotas, self.quotas.limits
        now = quotas.clock()
        taken: list[TokenBucket] = []
        if limits.failed_resume_burst:
            for state in (self.ip, self.principal):
                if state is None:
                    continue
                bucket = state.failed_resumes
                if bucket is None:
                    bucket = state.failed_resumes = TokenBucket(
                        limits.failed_resumes_per_minute / 60.0, limits.failed_resume_burst, now
                    )
                if not bucket.take(now):
                    wait = bucket.retry_after(now)
                    for other in taken:
                        other.refund()
                    quotas.refused[ErrorCode.TOO_MANY_FAILED_RESUMES.value] += 1
                    raise ProtocolViolation(
                        ErrorCode.TOO_MANY_FAILED_RESUMES,
                        "too many failed resumes from this client; the resume was not checked",
                        details={"retry_after_ms": milliseconds(wait)},
                    )
                taken.append(bucket)
        try:
            yield
        except ResumeRefused as refusal:
            if refusal.code not in _GUESSES:
                for bucket in taken:
                    bucket.refund()
            raise
        except BaseException:
            for bucket in taken:
                bucket.refund()
            raise
        for bucket in taken:
            bucket.refund()
        quotas._hold(session_id, self.ip, self.principal)

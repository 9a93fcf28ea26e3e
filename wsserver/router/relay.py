"""The router's byte relay: open a worker, hand it the request head, then splice.

The splice itself (protocol callbacks, no copy tasks) is :mod:`wsserver.router.splice`.

Frames are never parsed: close codes, pings and every message pass through as the
peers sent them. A worker is committed to only once it answered the head, so a
refusal (503) or silence sends the client to the next candidate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from dataclasses import dataclass

from wsserver.frontdoor.tls import client_context
from wsserver.metrics import NO_ROUTER_METRICS, RouterMetrics
from wsserver.registry.base import WorkerInfo
from wsserver.router.http import END_OF_HEAD, response_status
from wsserver.router.settings import RouterSettings
from wsserver.router.splice import Splice, stream_leftovers

# The server's logger: these lines were the server's before the relay had its own module,
# and operators filter on the name.
log = logging.getLogger("wsserver.router.server")

CHUNK = 65536
"""The stream buffers' limit while the heads are read."""


@dataclass(frozen=True)
class Upstream:
    """A worker that answered the request head."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    status: int
    response: bytes
    """The worker's response head, byte for byte."""


UP, DOWN = "client_to_worker", "worker_to_client"
"""Directions of the relayed-bytes metric."""


class Relay:
    """Opens connections to workers and copies bytes between them and clients."""

    def __init__(
        self,
        settings: RouterSettings,
        counters: dict[str, int],
        metrics: RouterMetrics = NO_ROUTER_METRICS,
    ) -> None:
        self.metrics = metrics
        self.settings = settings
        self.counters = counters
        """The router's counters: ``worker_failures`` and ``active`` are kept here."""
        self._worker_tls: ssl.SSLContext | None = None
        self.splices: set[Splice] = set()
        """The connections relayed now."""

    def buffered_bytes(self) -> int:
        """Bytes held for peers across every relayed connection (bounded per connection:
        :data:`~wsserver.router.splice.WRITE_HIGH_WATER` plus one read, each way)."""
        return sum(spliced.buffered() for spliced in self.splices)

    async def open(self, worker: WorkerInfo, head: bytes) -> Upstream | None:
        """Connect to ``worker``, send ``head``, read its response head; None if it failed."""
        timeout = self.settings.connect_timeout
        try:
            host, port = worker.address
            tls = self._worker_context() if worker.url.startswith("wss://") else None
            async with asyncio.timeout(timeout):
                up_reader, up_writer = await asyncio.open_connection(
                    host, port, limit=CHUNK, ssl=tls, server_hostname=host if tls else None
                )
        except (OSError, TimeoutError, ValueError) as exc:
            self.counters["worker_failures"] += 1
            self.metrics.placement_failed("unreachable")
            log.info("worker %s unreachable: %s", worker.worker_id, exc or type(exc).__name__)
            return None
        try:
            tune(
                up_writer,
                self.settings.tcp_user_timeout,
                receive_buffer=self.settings.socket_buffer,
            )
            up_writer.write(head)
            async with asyncio.timeout(timeout):
                await up_writer.drain()
                response = await up_reader.readuntil(END_OF_HEAD)
            return Upstream(up_reader, up_writer, response_status(response), response)
        # LimitOverrunError: no head within CHUNK bytes (not HTTP, or a broken worker);
        # it is no ValueError, and uncaught it cut the client with a traceback, no retry.
        except (
            OSError,
            TimeoutError,
            ValueError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ) as exc:
            self.counters["worker_failures"] += 1
            self.metrics.placement_failed("unreachable")
            log.info("worker %s did not answer: %s", worker.worker_id, exc or type(exc).__name__)
        except BaseException:
            up_writer.transport.abort()
            raise
        up_writer.transport.abort()
        return None

    def _worker_context(self) -> ssl.SSLContext:
        """TLS to wss:// workers, verified against ``--worker-ca-file`` or the system's CAs."""
        if self._worker_tls is None:
            self._worker_tls = client_context(self.settings.worker_ca_file)
        return self._worker_tls

    async def splice(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: Upstream
    ) -> None:
        """Relay both ways (:mod:`wsserver.router.splice`) until both sides closed."""
        self.counters["active"] += 1
        spliced = Splice(
            self.settings.linger_timeout,
            self.metrics.byte_counter(UP),
            self.metrics.byte_counter(DOWN),
        )
        try:
            self.splices.add(spliced)
            # What each stream read past its head goes first, in order.
            client_bytes, client_eof = stream_leftovers(reader)
            worker_bytes, worker_eof = stream_leftovers(upstream.reader)
            spliced.start(
                writer.transport,
                client_bytes,
                client_eof,
                upstream.writer.transport,
                worker_bytes,
                worker_eof,
            )
            await spliced.wait()
        except BaseException:
            upstream.writer.transport.abort()
            raise
        finally:
            self.counters["active"] -= 1
            self.splices.discard(spliced)
            upstream.writer.close()


def tune(
    writer: asyncio.StreamWriter,
    user_timeout: float,
    *,
    send_buffer: int = 0,
    receive_buffer: int = 0,
) -> None:
    """No Nagle delay, keepalives, a bound on unacknowledged data (Linux), and the
    kernel buffers asked for (0: the kernel's autotuning, up to several MiB each)."""
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if user_timeout and hasattr(socket, "TCP_USER_TIMEOUT"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(user_timeout * 1000))
        if send_buffer:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        if receive_buffer:
            # Set after the connect: the window scale is agreed already, but the window
            # the router advertises stays within this buffer from here on.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)

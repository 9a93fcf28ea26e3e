"""The worker's shutdown sequence of a deploy (SIGTERM), in named steps.

1. **stop taking sessions**: ``/readyz`` says 503, the registry says draining, new
   connections and new sessions are refused (HTTP 503, close 1013) so they go
   elsewhere (a worker of a ``--workers`` group closes its listener instead: the
   kernel gives new connections to the others);
2. **let responses finish**, up to ``timeout`` seconds (or until ``force``);
3. **end the rest** explicitly and continuably, rather than lose them with the worker;
4. **tell clients to reconnect** (close 1012): they resume on another worker;
5. **write the last events** to the store for the new owners, then stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from protocol.codes import CloseCode
from wsserver.registry.base import RegistryUnavailable, WorkerInfo, WorkerRegistry
from wsserver.session.persistence import Persister
from wsserver.session.runtime import SessionRuntime
from wsserver.store.base import SessionStore
from wsserver.transport.websocket import Connection
from wsserver.worker.settings import Settings

# The server's logger: this line was the server's before the drain had its own module,
# and operators filter on the name.
log = logging.getLogger("wsserver.worker.server")

_POLL_S = 0.05
"""How often step 2 looks whether responses are still running."""
_FLUSH_POLL_S = 0.01
"""How often the memory store's drain looks whether writers sent everything."""


class DrainingWorker(Protocol):
    """What the sequence needs of the worker."""

    draining: bool
    registry: WorkerRegistry | None
    store: SessionStore
    persister: Persister
    connections: set[Connection]
    settings: Settings

    @property
    def sessions(self) -> dict[str, SessionRuntime]:
        """Live sessions on this worker, by id."""
        ...

    def worker_info(self) -> WorkerInfo:
        """This worker's entry in the registry."""
        ...

    def stop_listening(self) -> None:
        """Close the listener, keep the connections."""
        ...

    async def stop(self) -> None:
        """The final shutdown: stop accepting, persist, stop the engine."""
        ...


async def drain(worker: DrainingWorker, timeout: float, force: asyncio.Event | None) -> None:
    """Run the steps above; ``force`` cuts step 2 short (a second SIGTERM)."""
    await _stop_taking_sessions(worker)
    log.info("draining: up to %.0f s for %d running responses", timeout, _running(worker))
    await _let_responses_finish(worker, timeout, force or asyncio.Event())
    for runtime in list(worker.sessions.values()):
        # Ended here, explicitly and continuable, rather than lost with the worker.
        runtime.stop_running("worker_draining")
    if not worker.store.shared:
        # The close stops the writers, and with the memory store no other worker can
        # replay those response.done: let the writers send them first (bounded, for
        # clients that stopped reading). A shared store's next owner replays them, and
        # a client answering at once must not start a response here.
        await _let_writers_send(worker)
    for connection in list(worker.connections):
        connection.close(CloseCode.SERVICE_RESTART, "service restart: resume elsewhere")
    # Numbered events of the departed clients go to the store for the new owners.
    await worker.persister.flush()
    await worker.stop()


async def _stop_taking_sessions(worker: DrainingWorker) -> None:
    worker.draining = True
    if worker.settings.reuse_port:
        # One of a group on a shared port: new connections go to the others at once
        # rather than to a 503 here.
        worker.stop_listening()
    if worker.registry is not None:
        # Routers stop placing new sessions here at once, not at the next interval.
        with contextlib.suppress(RegistryUnavailable):
            await worker.registry.publish(worker.worker_info())


async def _let_responses_finish(
    worker: DrainingWorker, timeout: float, forced: asyncio.Event
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    # Responses end in many ways (engine, interrupt, cancel, expiry); a 50 ms poll
    # for the few seconds of a drain is simpler than a signal from each of them.
    while _running(worker) and loop.time() < deadline and not forced.is_set():  # noqa: ASYNC110
        await asyncio.sleep(_POLL_S)


async def _let_writers_send(worker: DrainingWorker) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + worker.settings.close_timeout
    while _unsent(worker) and loop.time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(_FLUSH_POLL_S)


def _running(worker: DrainingWorker) -> int:
    return sum(1 for r in worker.sessions.values() if r.session.active is not None)


def _unsent(worker: DrainingWorker) -> bool:
    """Whether an attached session still has events its writer has not sent."""
    return any(c.runtime.has_unsent for c in worker.connections if c.runtime is not None)

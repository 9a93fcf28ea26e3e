"""Where the router puts a connection: the order in which it tries the live workers."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from wsserver.registry.base import WorkerInfo


def rendezvous_order(key: str, workers: Sequence[WorkerInfo]) -> list[WorkerInfo]:
    """``workers`` by highest random weight for ``key``, best first.

    Deterministic, and stable under membership changes: removing a worker moves only
    the keys that ranked it first; every other key keeps its first choice. The NUL
    separator keeps ``("ab", "c")`` and ``("a", "bc")`` apart.
    """

    def score(worker: WorkerInfo) -> tuple[bytes, str]:
        digest = hashlib.sha256(f"{key}\0{worker.worker_id}".encode()).digest()
        return digest, worker.worker_id

    return sorted(workers, key=score, reverse=True)


def placement_order(
    key: str, workers: Sequence[WorkerInfo], owner: str | None = None
) -> list[WorkerInfo]:
    """The workers to try for ``key``, best first.

    Draining workers never take a connection. Full workers come after every worker
    with room — not never: their session count is a heartbeat old, and they answer
    503 themselves if still full. The session's live owner goes first regardless, as
    resuming there takes no new room and needs no takeover.
    """
    ranked = rendezvous_order(key, [w for w in workers if not w.draining])
    ranked = [w for w in ranked if not w.full] + [w for w in ranked if w.full]
    owners = [w for w in ranked if w.worker_id == owner]
    return owners + [w for w in ranked if w.worker_id != owner]

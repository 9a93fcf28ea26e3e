"""The runner's side of the client processes: start them, talk to them, end them for sure."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

import psutil

from loadtest.common.processes import StopsOnExit, cpu_seconds


class ClientFailed(RuntimeError):
    """A client process reported an error, died, or did not answer in time."""


def split(total: int, parts: int) -> list[int]:
    """``total`` spread over ``parts`` as evenly as possible (larger shares first)."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


class ClientPool(StopsOnExit):
    """One spawned process per plan, each with a pipe to the runner.

    Processes are spawned (not forked) so none inherits the runner's state;
    leaving the ``with`` block joins them, then terminates and kills any left.
    """

    def __init__(self, target: Callable[[Any, Connection], None], plans: Sequence[Any]) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipes: list[Connection] = []
        self._processes: list[multiprocessing.process.BaseProcess] = []
        self._child_ends: list[Connection] = []
        for index, plan in enumerate(plans):
            parent_end, child_end = context.Pipe()
            process = context.Process(
                target=target, args=(plan, child_end), name=f"load-client-{index}", daemon=True
            )
            self._pipes.append(parent_end)
            self._child_ends.append(child_end)
            self._processes.append(process)

    def __enter__(self) -> ClientPool:
        for process in self._processes:
            process.start()
        for child_end in self._child_ends:
            child_end.close()
        return self

    def pids(self) -> list[int]:
        """Process ids of the started clients."""
        return [p.pid for p in self._processes if p.pid is not None]

    def cpu_seconds(self) -> float:
        """User plus system CPU time of every client so far."""
        total = 0.0
        for pid in self.pids():
            try:
                total += cpu_seconds(psutil.Process(pid))
            except psutil.Error:
                continue
        return total

    def broadcast(self, message: dict[str, Any]) -> None:
        """Send the same message to every client."""
        for pipe in self._pipes:
            pipe.send(message)

    def gather(self, kind: str, timeout_s: float) -> list[dict[str, Any]]:
        """One message of ``kind`` from every client, in plan order."""
        answers: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout_s
        while len(answers) < len(self._pipes):
            pending = [p for i, p in enumerate(self._pipes) if i not in answers]
            remaining = deadline - time.monotonic()
            ready = wait(pending, timeout=max(0.0, remaining)) if remaining > 0 else []
            if not ready:
                raise ClientFailed(f"{len(pending)} client(s) sent no {kind!r} in {timeout_s:.0f}s")
            for pipe in ready:
                assert isinstance(pipe, Connection)
                answers[self._pipes.index(pipe)] = self._receive(pipe, kind)
        return [answers[i] for i in range(len(self._pipes))]

    @staticmethod
    def _receive(pipe: Connection, kind: str) -> dict[str, Any]:
        try:
            message: dict[str, Any] = pipe.recv()
        except EOFError:
            raise ClientFailed(f"a client exited before sending {kind!r}") from None
        if message.get("kind") == "error":
            raise ClientFailed(f"a client failed:\n{message.get('message')}")
        if message.get("kind") != kind:
            raise ClientFailed(f"expected {kind!r} from a client, got {message.get('kind')!r}")
        return message

    def stop(self, timeout_s: float = 10.0) -> None:
        """Close the pipes (a waiting client then exits), join, terminate, kill."""
        for pipe in self._pipes:
            pipe.close()
        deadline = time.monotonic() + timeout_s
        for process in self._processes:
            if process.pid is not None:
                process.join(max(0.1, deadline - time.monotonic()))
        for process in self._processes:
            if process.is_alive():
                process.terminate()
                process.join(2.0)
            if process.is_alive():
                process.kill()
                process.join(2.0)

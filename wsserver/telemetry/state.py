"""What every line and span of this process shares: the worker, its engine and model.

One per process (like the logging configuration itself), set once at startup by
:func:`configure_worker`; a worker built without it logs with empty names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wsserver.telemetry.tracing import ResponseTracer


@dataclass(slots=True)
class ProcessTelemetry:
    """The process's names and its tracer (``None``: traces are off)."""

    worker_id: str = ""
    engine: str = ""
    model: str = ""
    tracer: ResponseTracer | None = None


PROCESS = ProcessTelemetry()
"""The one instance, read by the formatters and by each session's telemetry."""


def configure_worker(
    worker_id: str, *, engine: str = "", model: str = "", tracer: ResponseTracer | None = None
) -> None:
    """Name the worker, engine and model every line and span carries; set the tracer."""
    PROCESS.worker_id = worker_id
    PROCESS.engine = engine
    PROCESS.model = model
    PROCESS.tracer = tracer

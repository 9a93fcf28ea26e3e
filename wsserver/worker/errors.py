"""The worker's exceptions: one tree, rooted at :class:`WorkerError`."""

from __future__ import annotations


class WorkerError(Exception):
    """Base of the worker's errors."""


class WorkerConfigError(WorkerError, ValueError):
    """The settings name a component this worker cannot build (found at startup)."""

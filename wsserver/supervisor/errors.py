"""The supervisor's exception tree."""

from __future__ import annotations


class SupervisorError(Exception):
    """Base of the supervisor's errors."""


class WorkerCountError(SupervisorError):
    """``--workers`` asks for what the other settings cannot give (say, a memory store)."""


class PortUnavailable(SupervisorError):
    """The group's port could not be reserved."""

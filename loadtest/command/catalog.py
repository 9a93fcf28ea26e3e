"""Every scenario ``python -m loadtest`` knows: the new session scenarios and the benchmarks."""

from __future__ import annotations

import importlib.util

SCENARIOS = {
    "chat": "many text sessions asking for answers back to back: TTFT, inter-token, tokens/s",
    "voice": "audio in/out sessions: a spoken turn in real time, its answer in text and audio",
    "barge-in": "voice sessions that talk over every answer: interrupt -> done, last audio",
    "handoff": "connections cut at a random token mid-answer and resumed: lost/doubled = 0",
    "reconnect-storm": "every connection dropped at one instant and resumed: drop -> ready",
    "slow-clients": "readers that stop or slow down beside healthy ones: memory and closes",
    "mixed": "a weighted profile of the scenarios above (--mix chat=5,voice=2,...)",
}
"""The session scenarios run by :mod:`loadtest.command` (one configuration, report, plots)."""

BENCHMARKS = {
    "stream": ("loadtest.stream", "the worker's streaming against a bare websockets server"),
    "store": ("loadtest.store", "the Redis session store against the memory store; storm"),
    "router": ("loadtest.router", "the worker reached directly against through the router"),
    "voice-capacity": ("loadtest.voice", "how many real-time voice sessions one worker holds"),
    "auth": ("loadtest.auth", "handshake cost of each credential kind against none"),
    "slow-consumer": ("loadtest.slow_consumer", "worker RSS per stalled session vs its bounds"),
    "fuzz": ("loadtest.fuzz", "malformed input over many connections beside healthy sessions"),
    "partial-json": ("loadtest.partial_json", "the incremental JSON parser against jiter"),
    "engines": ("loadtest.engines", "a real model through the worker against it called directly"),
    "realtime": ("loadtest.realtime", "/v1/realtime against the native protocol"),
    "metrics-cost": ("loadtest.metrics_cost", "CPU per token with metrics on against off"),
    "send-path": ("loadtest.send_path", "--ws-engine fast against the worker and bare websockets"),
    "capacity": ("loadtest.capacity", "memory, CPU and Redis work per session kind: CAPACITY.md"),
}
"""Today's benchmarks: ``python -m loadtest NAME ARGS`` runs ``python -m MODULE ARGS``."""


def available_benchmarks() -> dict[str, tuple[str, str]]:
    """The benchmarks whose module is in this tree."""
    return {name: entry for name, entry in BENCHMARKS.items() if importlib.util.find_spec(entry[0])}


def listing() -> str:
    """One line per scenario, for ``--list``."""
    width = max(len(n) for n in [*SCENARIOS, *BENCHMARKS])
    lines = ["session scenarios (shared flags, JSON report, PNG plots):"]
    lines += [f"  {name:<{width}}  {text}" for name, text in SCENARIOS.items()]
    lines.append("benchmarks (their own flags: python -m loadtest NAME --help):")
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in available_benchmarks().items()]
    return "\n".join(lines)

"""The one configuration of ``python -m loadtest SCENARIO``: flags and a config file, parsed once.

Every scenario shares :class:`Settings`; a scenario's own knobs (share of interrupted
answers, of slow readers, the mixed profile's weights) are fields here too, named by the
scenario, so one ``--config FILE`` (TOML or JSON, the same keys as the flags with ``_``
for ``-``) configures any scenario. A flag given on the command line wins over the file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from loadtest.common.config import REPORTS


class SettingsError(ValueError):
    """The flags or the config file ask for something the load test refuses."""


DEFAULT_MIX = {"chat": 5.0, "voice": 2.0, "barge-in": 1.0, "handoff": 1.0, "slow-clients": 1.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """What one run does; every field is a flag and a config-file key."""

    sessions: int = 8
    duration: float = 10.0
    """Seconds of load; the hard bound is ``duration + drain`` per server."""
    drain: float = 5.0
    """After ``duration``, how long owed answers are waited for before the run is cut."""
    ramp: float = 1.0
    """Sessions open spread over this many seconds."""
    rate: float = 50.0
    """Tokens/s per answer of the local worker and the baseline (the simulated engine's)."""
    answer_tokens: int = 40
    think: float = 0.2
    """Seconds a session waits between answers."""
    seed: int = 1
    url: str = ""
    """A target to load (``ws://host:port/...``); empty: a local worker is started."""
    api_key: str = ""
    report: Path = field(default_factory=Path)
    baseline: bool = True
    progress: bool = True
    # -- scenario knobs --
    interrupt_after: int = 8
    """barge-in: tokens received before the user talks over the answer."""
    cut_share: float = 1.0
    """handoff: share of answers whose connection is cut at a random token."""
    drop_at: float = 0.5
    """reconnect-storm: when every connection drops, as a share of ``duration``."""
    slow_share: float = 0.5
    """slow-clients: share of sessions that stop reading (half of them read slowly)."""
    slow_read_s: float = 0.2
    """slow-clients: a slow reader's pause between two messages."""
    chunk_ms: int = 20
    """voice: input audio per chunk (sent in real time)."""
    turn_ms: int = 0
    """voice: length of each spoken turn (0: the whole recording, about 2 s)."""
    mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    worker_args: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """What these settings refuse, in words."""
        out: list[str] = []
        # A JSON file can say NaN or Infinity: no comparison below would catch them.
        floats = ("duration", "drain", "ramp", "rate", "think", "slow_read_s")
        odd = [name for name in floats if not math.isfinite(getattr(self, name))]
        if odd:
            out.append(f"{', '.join(odd)} must be finite numbers")
        if not 1 <= self.sessions <= 20_000:
            out.append("sessions must be 1..20000")
        if not 0 < self.duration <= 3600 or not 0 <= self.drain <= 600:
            out.append("duration must be in (0, 3600] and drain in [0, 600]")
        if self.ramp < 0 or self.think < 0 or self.rate <= 0 or self.slow_read_s < 0:
            out.append("ramp, think and slow-read-s must be >= 0, rate > 0")
        if not 2 <= self.answer_tokens <= 1_000_000:
            out.append("answer_tokens must be 2..1000000")
        for name in ("cut_share", "drop_at", "slow_share"):
            if not 0 <= getattr(self, name) <= 1:
                out.append(f"{name.replace('_', '-')} must be in [0, 1]")
        if self.url and not self.url.startswith(("ws://", "wss://")):
            out.append("url must start with ws:// or wss://")
        elif self.url and not _openable(self.url):
            out.append("url must name a host and a port in 1..65535 (ws://host[:port]/path)")
        if not 1 <= self.interrupt_after < self.answer_tokens:
            out.append("interrupt_after must be in [1, answer_tokens)")
        if not 10 <= self.chunk_ms <= 200 or self.turn_ms < 0:
            out.append("chunk_ms must be 10..200 and turn_ms >= 0")
        unknown = set(self.mix) - set(DEFAULT_MIX)
        weights = list(self.mix.values())
        numbers = all(_is_number(w) and math.isfinite(w) and w >= 0 for w in weights)
        if unknown or not numbers or not any(w > 0 for w in weights):
            out.append(f"mix weights are for {sorted(DEFAULT_MIX)}, finite, >= 0, one > 0")
        if not all(isinstance(arg, str) for arg in self.worker_args):
            out.append("worker_args must be a list of strings")
        return out


def _openable(url: str) -> bool:
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for one out of range
    except ValueError:  # "ws://[x": an unclosed IPv6 host
        return False
    return bool(parts.hostname) and port != 0


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_FLAGS = {f.name for f in fields(Settings)}


def add_flags(p: argparse.ArgumentParser) -> None:
    """Every :class:`Settings` field as a flag; defaults are ``None`` so a file can fill them."""
    p.add_argument("--config", type=Path, help="TOML or JSON file with the same keys as the flags")
    p.add_argument("--sessions", type=int, help="concurrent sessions (8)")
    p.add_argument("--duration", type=float, help="seconds of load per server (10)")
    p.add_argument("--drain", type=float, help="seconds to wait for owed answers after it (5)")
    p.add_argument("--ramp", type=float, help="seconds over which sessions open (1)")
    p.add_argument("--rate", type=float, help="tokens/s per answer, local worker and baseline (50)")
    p.add_argument("--answer-tokens", type=int, help="tokens per answer, local servers (40)")
    p.add_argument("--think", type=float, help="seconds between a session's answers (0.2)")
    p.add_argument("--seed", type=int, help="random seed (1)")
    p.add_argument("--url", help="target ws:// URL (default: start a local worker)")
    p.add_argument(
        "--api-key", help="credential sent as Authorization: Bearer (default: $WSSERVER_API_KEY)"
    )
    p.add_argument("--report", type=Path, help="JSON report path (plots go beside it)")
    p.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_const",
        const=False,
        help="skip the run against the local bare server",
    )
    p.add_argument(
        "--no-progress", dest="progress", action="store_const", const=False,
        help="no progress bar",
    )  # fmt: skip
    p.add_argument("--interrupt-after", type=int, help="barge-in: tokens before talking (8)")
    p.add_argument("--cut-share", type=float, help="handoff: share of answers cut (1.0)")
    p.add_argument("--drop-at", type=float, help="reconnect-storm: drop time / duration (0.5)")
    p.add_argument("--slow-share", type=float, help="slow-clients: share of bad readers (0.5)")
    p.add_argument("--slow-read-s", type=float, help="slow-clients: pause per message (0.2)")
    p.add_argument("--chunk-ms", type=int, help="voice: audio per chunk (20)")
    p.add_argument("--turn-ms", type=int, help="voice: spoken turn length (0: whole, ~2 s)")
    p.add_argument("--mix", help="mixed: weights, e.g. chat=5,voice=2,handoff=1")
    p.add_argument(
        "--worker-arg", dest="worker_args", action="append", metavar="FLAG",
        help="extra flag for the local worker (repeatable), e.g. --worker-arg=--store=memory",
    )  # fmt: skip


def public_url(url: str) -> str:
    """``url`` without what may hold a credential (a query, a ``user:password@``)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def read_config_file(path: Path) -> dict[str, Any]:
    """The keys of a TOML (``.toml``) or JSON file, ``-`` in names read as ``_``."""
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise SettingsError(f"config file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"config file {path}: want a table of keys")
    out = {str(k).replace("-", "_"): v for k, v in data.items()}
    unknown = set(out) - _FLAGS
    if unknown:
        raise SettingsError(f"config file {path}: unknown keys {sorted(unknown)}")
    return out


def parse_mix(text: str) -> dict[str, float]:
    """``chat=5,voice=2`` as weights."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, weight = part.partition("=")
        try:
            out[name.strip()] = float(weight)
        except ValueError as exc:
            raise SettingsError(f"mix: bad weight in {part!r}") from exc
    return out


def _check_types(values: dict[str, Any]) -> None:
    """Each value of the kind its default has (an int is a float too; a path is a string)."""
    defaults = Settings()
    for name, value in values.items():
        default = getattr(defaults, name)
        want: type = str if isinstance(default, Path) else type(default)
        if name == "mix" and isinstance(value, str):
            continue
        ok = isinstance(value, want) or (want is float and isinstance(value, int))
        if isinstance(value, bool) and want is not bool:
            ok = False
        if not ok and not isinstance(value, Path):
            raise SettingsError(f"{name}: want {want.__name__}, got {type(value).__name__}")


def settings_from(args: argparse.Namespace, scenario: str) -> Settings:
    """The file's keys, then the flags given, then the report path; refused if invalid."""
    values: dict[str, Any] = read_config_file(args.config) if args.config else {}
    for name in _FLAGS:
        given = getattr(args, name, None)
        if given is not None:
            values[name] = given
    # Like the SDK: a key in the environment stays out of the process list.
    values.setdefault("api_key", os.environ.get("WSSERVER_API_KEY", ""))
    _check_types(values)
    if isinstance(values.get("mix"), str):
        values["mix"] = parse_mix(values["mix"])
    if "report" in values:
        values["report"] = Path(values["report"])
    else:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        values["report"] = REPORTS / f"{scenario}-{stamp}.json"
    try:
        settings = replace(Settings(), **values)
    except TypeError as exc:
        raise SettingsError(f"bad configuration: {exc}") from exc
    problems = settings.problems()
    if problems:
        raise SettingsError("; ".join(problems))
    return settings

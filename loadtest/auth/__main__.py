"""Handshake cost of authentication: handshakes/s with each credential kind vs none.

``python -m loadtest.auth`` starts three ``wsserver serve`` workers as
subprocesses — one without authentication (the baseline), one with API keys, an
HS256 JWT secret and client tokens, one with an RS256 JWKS — and measures, in the
same run, handshakes: open a WebSocket (credentials in the ``Authorization``
header, or a client token as a subprotocol entry), send ``session.start``, read
``session.ready``, close. Modes run in interleaved rounds, so a machine that gets
busier during the run slows every mode alike. Figures: handshakes/s, p50/p99
handshake latency, worker CPU per handshake (the most stable on a shared machine),
and the authenticator's own cost per request (in this process, no network), each
beside the no-auth baseline as a ratio. A JSON report is written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from loadtest.common.config import add_report_flags, benchmark_parser, report_path
from loadtest.common.environment import environment
from loadtest.common.report import Figure, format_table, summarize, write_json
from loadtest.common.servers import ServerProcess, tail_on_error
from protocol.encoding import JSON_SUBPROTOCOL

START = json.dumps({"type": "session.start"})
MODES = ("none", "api_key", "jwt_hs256", "jwt_rs256", "client_token")
"""Each mode's worker: ``none`` the baseline one, ``jwt_rs256`` the JWKS one, else keyed."""


@dataclass
class ModeTally:
    """One mode's handshakes over every round."""

    latencies_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0
    cpu_s: float = 0.0
    failures: dict[str, int] = field(default_factory=dict)

    def result(self) -> dict[str, Any]:
        count = len(self.latencies_ms)
        return {
            "handshakes": count,
            "handshakes_per_s": round(count / self.seconds, 1) if self.seconds else None,
            "latency_ms": summarize(self.latencies_ms),
            "worker_cpu_ms_per_handshake": round(1000 * self.cpu_s / count, 3) if count else None,
            "failures": self.failures,
        }


@dataclass(frozen=True)
class Credentials:
    """What the clients present, per mode, and the worker flags that accept it."""

    folder: Path
    api_key: str
    hs256: str
    rs256: str
    admin_key: str

    def flags(self, mode: str) -> list[str]:
        if mode == "none":
            return ["--auth=none"]
        if mode == "jwt_rs256":
            return [f"--jwt-jwks-file={self.folder / 'jwks.json'}"]
        return [
            f"--api-keys-file={self.folder / 'keys'}",
            f"--jwt-secret-file={self.folder / 'jwt-secret'}",
            f"--client-token-secret-file={self.folder / 'token-secret'}",
        ]


def make_credentials(folder: Path, lifetime_s: float) -> Credentials:
    """Keys, secrets and tokens for one run (signed once: clients only present them)."""
    import os

    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    from wsserver.frontdoor.api_keys import key_line, new_api_key

    api_key, admin_key = new_api_key(), new_api_key()
    (folder / "keys").write_text(
        key_line("bench", api_key) + "\n" + key_line("ops", admin_key, admin=True) + "\n"
    )
    secret = os.urandom(32).hex().encode()
    (folder / "jwt-secret").write_bytes(secret)
    (folder / "token-secret").write_bytes(os.urandom(32).hex().encode())
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    jwk.update(kid="bench", alg="RS256", use="sig")
    (folder / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    claims = {"sub": "bench", "aud": "wsserver", "exp": int(time.time() + lifetime_s)}
    return Credentials(
        folder,
        api_key,
        jwt.encode(claims, secret, algorithm="HS256"),
        jwt.encode(claims, private, algorithm="RS256", headers={"kid": "bench"}),
        admin_key,
    )


def mint_tokens(url: str, key: str, count: int, per_token: int) -> list[str]:
    """Client tokens from the worker's endpoint, each good for ``per_token`` sessions."""
    base = url.replace("ws://", "http://")
    tokens = []
    for _ in range(count):
        request = urllib.request.Request(
            f"{base}/v1/client_tokens?ttl_s=3600&max_sessions={per_token}", method="POST"
        )
        request.add_header("Authorization", f"Bearer {key}")
        with urllib.request.urlopen(request, timeout=10) as response:
            tokens.append(json.load(response)["token"])
    return tokens


class Presenter:
    """The next credential of a mode, as connect() keyword arguments."""

    def __init__(self, creds: Credentials, tokens: list[str], per_token: int) -> None:
        self.creds = creds
        self.tokens = tokens
        self.per_token = per_token
        self.token_uses = 0

    def kwargs(self, mode: str) -> dict[str, Any]:
        subprotocols = [Subprotocol(JSON_SUBPROTOCOL)]
        bearer = {"api_key": self.creds.api_key, "jwt_hs256": self.creds.hs256}
        bearer["jwt_rs256"] = self.creds.rs256
        if mode == "client_token":
            token = self.tokens[self.token_uses // self.per_token]
            self.token_uses += 1
            subprotocols.append(Subprotocol(f"wsserver.token.{token}"))
            return {"subprotocols": subprotocols}
        if mode in bearer:
            headers = {"Authorization": f"Bearer {bearer[mode]}"}
            return {"subprotocols": subprotocols, "additional_headers": headers}
        return {"subprotocols": subprotocols}


async def handshake(url: str, kwargs: dict[str, Any], timeout_s: float) -> float:
    """One open + session.start + session.ready + close; its latency in ms."""
    began = time.perf_counter()
    async with asyncio.timeout(timeout_s):
        async with connect(url, compression=None, **kwargs) as ws:
            await ws.send(START)
            ready = await ws.recv()
            elapsed = (time.perf_counter() - began) * 1000
            if not str(ready).startswith('{"type":"session.ready"'):
                raise RuntimeError(f"expected session.ready, got {str(ready)[:120]}")
    return elapsed


async def batch(
    url: str, mode: str, presenter: Presenter, count: int, concurrency: int, tally: ModeTally
) -> None:
    """``count`` handshakes, ``concurrency`` at a time, into ``tally``."""
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            try:
                tally.latencies_ms.append(await handshake(url, presenter.kwargs(mode), 10.0))
            except Exception as exc:
                why = f"{type(exc).__name__}: {exc}"[:120]
                tally.failures[why] = tally.failures.get(why, 0) + 1

    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(count)))
    tally.seconds += time.perf_counter() - began


async def measure(
    workers: dict[str, ServerProcess], presenter: Presenter, args: argparse.Namespace
) -> dict[str, ModeTally]:
    tallies = {mode: ModeTally() for mode in MODES}
    per_round = max(1, args.handshakes // args.rounds)
    for mode in MODES:  # warm-up: imports, first-use caches, JIT-free but cold paths
        await batch(
            workers[mode].url, mode, presenter, args.concurrency, args.concurrency, ModeTally()
        )
    for _ in range(args.rounds):
        for mode in MODES:
            worker = workers[mode]
            cpu_before = worker.cpu_seconds()
            await batch(worker.url, mode, presenter, per_round, args.concurrency, tallies[mode])
            tallies[mode].cpu_s += worker.cpu_seconds() - cpu_before
    return tallies


def verification_us(creds: Credentials, token: str, repeat: int = 5000) -> dict[str, float]:
    """Microseconds the authenticator alone takes per request, in this process, per mode."""
    import timeit

    from wsserver.frontdoor.authenticator import Authenticator
    from wsserver.frontdoor.config import FrontDoorSettings

    keyed = Authenticator.from_settings(
        FrontDoorSettings(
            api_keys_file=str(creds.folder / "keys"),
            jwt_secret_file=str(creds.folder / "jwt-secret"),
            client_token_secret_file=str(creds.folder / "token-secret"),
        ),
        "127.0.0.1",
    )
    jwks = Authenticator.from_settings(
        FrontDoorSettings(jwt_jwks_file=str(creds.folder / "jwks.json")), "127.0.0.1"
    )
    open_door = Authenticator(required=False)
    encoding = JSON_SUBPROTOCOL
    requests = {
        "none": (open_door, None, encoding),
        "api_key": (keyed, f"Bearer {creds.api_key}", encoding),
        "jwt_hs256": (keyed, f"Bearer {creds.hs256}", encoding),
        "jwt_rs256": (jwks, f"Bearer {creds.rs256}", encoding),
        "client_token": (keyed, None, f"{encoding}, wsserver.token.{token}"),
    }
    costs = {}
    for mode, (auth, header, offered) in requests.items():

        def one(
            auth: Authenticator = auth, header: str | None = header, offered: str = offered
        ) -> None:
            auth.authenticate(authorization=header, subprotocols=offered, query="")

        costs[mode] = round(timeit.timeit(one, number=repeat) / repeat * 1e6, 2)
    return costs


def worker_for(mode: str) -> str:
    return {"none": "none", "jwt_rs256": "jwt_rs256"}.get(mode, "api_key")


def run(args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    creds = make_credentials(log_dir, lifetime_s=3600)
    base = [
        sys.executable,
        "-m",
        "wsserver.cli.main",
        "serve",
        "--host=127.0.0.1",
        "--port=0",
        "--log-level=WARNING",
        # Sessions end with their connection; keep the records of a long run small.
        "--resume-window=5",
        "--grace-period=0",
    ]
    kinds = ("none", "api_key", "jwt_rs256")
    servers = {k: ServerProcess(f"worker-{k}", [*base, *creds.flags(k)], log_dir) for k in kinds}
    try:
        for server in servers.values():
            server.start()
        with tail_on_error(*servers.values()):
            workers = {mode: servers[worker_for(mode)] for mode in MODES}
            per_token = 1000
            needed = args.handshakes + args.concurrency * 2
            tokens = mint_tokens(
                servers["api_key"].url, creds.api_key, needed // per_token + 1, per_token
            )
            tallies = asyncio.run(measure(workers, Presenter(creds, tokens, per_token), args))
    finally:
        for server in servers.values():
            server.stop()
    costs = verification_us(creds, tokens[0])
    return {mode: {**tally.result(), "verify_us": costs[mode]} for mode, tally in tallies.items()}


def build_figures(results: dict[str, Any]) -> list[Figure]:
    base = results["none"]
    figures = []
    for mode in MODES[1:]:
        got = results[mode]
        figures += [
            Figure(
                f"{mode} handshakes/s",
                "/s",
                got["handshakes_per_s"],
                "none",
                base["handshakes_per_s"],
            ),
            Figure(
                f"{mode} handshake p50",
                "ms",
                got["latency_ms"]["p50"],
                "none",
                base["latency_ms"]["p50"],
            ),
            Figure(
                f"{mode} handshake p99",
                "ms",
                got["latency_ms"]["p99"],
                "none",
                base["latency_ms"]["p99"],
            ),
            Figure(f"{mode} credential check", "us", got["verify_us"], "none", base["verify_us"]),
            Figure(
                f"{mode} worker CPU per handshake",
                "ms",
                got["worker_cpu_ms_per_handshake"],
                "none",
                base["worker_cpu_ms_per_handshake"],
            ),
        ]
    return figures


def build_parser() -> argparse.ArgumentParser:
    parser = benchmark_parser("auth", __doc__)
    parser.add_argument("--handshakes", type=int, default=2000, help="per mode (default 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--concurrency", type=int, default=16, help="handshakes in flight")
    parser.add_argument("--quick", action="store_true", help="500 handshakes per mode")
    add_report_flags(parser, worker_arg_help=None)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    if args.quick:
        args.handshakes = 500
    started = datetime.now()
    path = report_path(args, "auth")
    env = environment()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-auth-") as log_dir:
        results = run(args, Path(log_dir))
    figures = build_figures(results)
    failures = {m: r["failures"] for m, r in results.items() if r["failures"]}
    report = {
        "benchmark": "auth",
        "started_at": started.isoformat(timespec="seconds"),
        "elapsed_s": round(time.monotonic() - began, 1),
        "config": {
            "handshakes": args.handshakes,
            "rounds": args.rounds,
            "concurrency": args.concurrency,
        },
        "environment": env,
        "figures": [f.to_dict() for f in figures],
        "results": results,
        "warnings": [f"{m}: failed handshakes {f}" for m, f in failures.items()],
    }
    print(format_table(figures, value_header="with auth"))
    for warning in report["warnings"]:
        print(f"warning: {warning}")
    write_json(path, report)
    print(f"\nreport: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

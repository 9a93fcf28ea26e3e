"""One rung of the voice ladder: N sessions against one server, measured in one window."""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from loadtest.common.pool import ClientPool
from loadtest.common.report import merge_counts, summarize
from loadtest.common.servers import ServerProcess, log_warnings, worker_argv
from loadtest.common.stream_load import Snapshot, machine_busy_pct
from loadtest.voice.client import Role, VoicePlan, voice_client_main
from loadtest.voice.config import VoiceConfig

START_DELAY_S = 1.0
"""From "go" to the first chunk: every client process is waiting on its pacer by then."""
TREND_STEP_S = 5.0


def start_voice_server(
    name: str, config: VoiceConfig, sessions: int, log_dir: Path
) -> ServerProcess:
    """The worker (energy VAD, paced answers with audio) or the bare baseline server."""
    if name == "worker":
        argv = worker_argv(
            decode_rate=config.decode_rate,
            answer_tokens=config.answer_tokens,
            sessions=sessions,
            extra=["--vad=energy", *config.worker_args],
        )
    else:
        argv = [sys.executable, "-m", "loadtest.voice.bare_server", "--host=127.0.0.1", "--port=0"]
    return ServerProcess.launch(f"{name}-{sessions}", argv, log_dir)


def _picked(index: int, share: float, shift: float) -> bool:
    """Whether session ``index`` is one of an evenly spread ``share`` of them."""
    return math.floor((index + 1) * share + shift) > math.floor(index * share + shift)


def roles(sessions: int, config: VoiceConfig, *, barge_in: bool) -> list[Role]:
    """Every session's role, spread evenly: barge-in and ping sessions mostly apart."""
    share = config.barge_in_share if barge_in else 0.0
    return [
        Role(barge_in=_picked(i, share, 0.0), pings=_picked(i, config.ping_share, 0.5))
        for i in range(sessions)
    ]


def plans(url: str, config: VoiceConfig, sessions: int, *, speech: bool) -> list[VoicePlan]:
    """One plan per client process; roles dealt round robin so each gets its share."""
    every = roles(sessions, config, barge_in=speech)
    return [
        VoicePlan(
            url=url,
            roles=tuple(every[p :: config.clients]),
            process_index=p,
            processes=config.clients,
            pace_slots=config.pace_slots,
            stream_s=config.warmup + (config.duration if speech else config.bare_duration),
            ping_interval_s=config.ping_interval,
            expect_speech=speech,
            seed=config.seed,
            connect_concurrency=config.connect_concurrency,
            drain_s=config.drain,
        )
        for p in range(config.clients)
    ]


def measure_rung(server: ServerProcess, config: VoiceConfig, sessions: int) -> dict[str, Any]:
    """Open N voice sessions, stream warm-up + window, and sum what the clients saw."""
    speech = server.name.startswith("worker")
    duration = config.duration if speech else config.bare_duration
    with ClientPool(voice_client_main, plans(server.url, config, sessions, speech=speech)) as pool:
        connected = pool.gather("connected", timeout_s=60 + sessions / 10)
        if not any(c["sessions"] for c in connected):
            failures = merge_counts(c["failures"] for c in connected)
            raise RuntimeError(f"no voice session could be opened on {server.name}: {failures}")
        t0 = time.monotonic() + START_DELAY_S
        start = t0 + config.warmup
        end = start + duration
        pool.broadcast({"kind": "go", "t0": t0, "start": start, "end": end})
        time.sleep(max(0.0, start - time.monotonic()))
        before = Snapshot.take(server, pool)
        time.sleep(max(0.0, end - time.monotonic()))
        after = Snapshot.take(server, pool)
        results = pool.gather("result", timeout_s=config.drain + 60)
    server.check_alive()
    summary = _summary(connected, results, before, after)
    summary["speech_started_trend"] = _trend(results, start, end)
    summary["server"] = server.name
    summary["worker_log"] = log_warnings(server)
    return summary


def _trend(results: list[dict[str, Any]], start: float, end: float) -> dict[str, Any]:
    """speech_started delay by when its chunk left: each half of the window, and per 5 s.

    A worker that keeps up shows the same delay in both halves; one that falls behind
    shows a delay that grows with its backlog.
    """
    pairs = [
        (t, ms) for r in results for t, ms in zip(r["speech_sent"], r["speech_ms"], strict=True)
    ]
    middle = (start + end) / 2
    steps = max(1, math.ceil((end - start) / TREND_STEP_S))
    return {
        "first_half_ms": summarize([ms for t, ms in pairs if t < middle]),
        "second_half_ms": summarize([ms for t, ms in pairs if t >= middle]),
        "p50_per_5s_ms": [
            summarize([ms for t, ms in pairs if 0 <= t - start - i * TREND_STEP_S < TREND_STEP_S])[
                "p50"
            ]
            for i in range(steps)
        ],
    }


def _summary(
    connected: list[dict[str, Any]],
    results: list[dict[str, Any]],
    before: Snapshot,
    after: Snapshot,
) -> dict[str, Any]:
    opened = sum(c["sessions"] for c in connected)
    wall = after.at - before.at

    def total(key: str) -> int:
        return sum(int(r[key]) for r in results)

    def samples(key: str) -> dict[str, float | int | None]:
        return summarize([x for r in results for x in r[key]])

    server_cpu = after.server_cpu - before.server_cpu
    clients_cpu = after.clients_cpu - before.clients_cpu
    busy = machine_busy_pct(before.machine, after.machine)
    cores = os.cpu_count() or 1
    per_session = server_cpu / wall / opened if opened else None
    expected, matched = total("expected_onsets"), total("matched_onsets")
    owed, answered = total("barge_ins_owed"), total("barge_ins_answered")
    return {
        "sessions_opened": opened,
        "connect_failures": merge_counts(c["failures"] for c in connected),
        "window_s": round(wall, 3),
        "speech_started_ms": samples("speech_ms"),
        "barge_done_ms": samples("barge_done_ms"),
        "barge_last_audio_ms": samples("barge_tail_ms"),
        "ping_ms": samples("ping_ms"),
        "send_lag_ms": samples("send_lag_ms"),
        "late_ticks": total("late_ticks"),
        "ticks": total("ticks"),
        "onsets": {
            "expected": expected,
            "matched": matched,
            "missed": expected - matched,
            "unexpected": total("unexpected_onsets"),
            "sessions_missing": total("sessions_missing_onsets"),
            "decided_too_late_to_time": total("late_decisions"),
        },
        "barge_ins": {
            "owed": owed,
            "answered": answered,
            "unanswered": owed - answered,
            "audio_after_decision": total("barge_frames_after"),
        },
        "unanswered_pings": total("unanswered_pings"),
        "dropped_sessions": total("dropped_sessions"),
        "errors": merge_counts(r["errors"] for r in results),
        "events": merge_counts(r["events"] for r in results),
        "done_statuses": merge_counts(r["done"] for r in results),
        "loops": merge_counts(r["loops"] for r in results),
        "cpu": {
            "server_pct_of_core": round(100 * server_cpu / wall, 1),
            "clients_pct_of_core": round(100 * clients_cpu / wall, 1),
            "machine_busy_pct": busy,
            # The rest of the busy time: the kernel's loopback networking (softirq, charged
            # to no process), the runner, and other users' jobs on a shared machine.
            "others_pct_of_core": (
                round(max(0.0, busy * cores - 100 * (server_cpu + clients_cpu) / wall), 1)
                if busy is not None
                else None
            ),
            "server_pct_of_core_per_session": (
                round(100 * per_session, 4) if per_session is not None else None
            ),
            # Each session streams one second of audio per second of wall time.
            "server_us_per_audio_s": (
                round(per_session * 1e6, 1) if per_session is not None else None
            ),
        },
        "server_stats_after": after.stats,
    }

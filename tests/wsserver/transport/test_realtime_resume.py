"""Resume over ``/v1/realtime``: the unmodified openai SDK reconnecting through a relay
that the SDK script cuts, and the refusals, spoken with raw frames."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.openai_sdk import openai_sdk_python
from tests.processes import WorkerProcess, eventually
from tests.wsserver.router.test_router import RouterProcess
from wsserver.frontdoor.api_keys import key_line, new_api_key

HERE = Path(__file__).parent


class Served:
    """A worker with two principals' keys."""

    def __init__(self, worker: WorkerProcess, alice: str, bob: str) -> None:
        self.worker, self.alice, self.bob = worker, alice, bob


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Answers of 40 tokens at 20 a second: 2 s to cut them, twice."""
    alice, bob = new_api_key(), new_api_key()
    keys = tmp_path_factory.mktemp("realtime-resume") / "keys"
    keys.write_text(key_line("alice", alice) + "\n" + key_line("bob", bob) + "\n")
    worker = WorkerProcess(
        "--api-keys-file",
        str(keys),
        "--answer-tokens",
        "40",
        "--decode-rate",
        "20",
        name="realtime-resume-worker",
    ).start()
    try:
        yield Served(worker, alice, bob)
    finally:
        worker.stop()


def sdk(served: Served, mode: str, cuts: str = "", *, url: str = "") -> dict[str, Any]:
    """Run realtime_sdk_resume.py with the SDK's python (to ``url``, or the worker)."""
    address = urlsplit(url or served.worker.url)
    script = str(HERE / "realtime_sdk_resume.py")
    args = [mode, cuts, str(address.hostname), str(address.port), served.alice]
    result = subprocess.run(
        [openai_sdk_python(), script, *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary


@pytest.fixture(scope="module")
def uncut(served: Served) -> dict[str, Any]:
    """The same turn with no cut: the answer a resumed one must equal."""
    return sdk(served, "none")


def assert_one_clean_stream(summary: dict[str, Any]) -> None:
    assert len(summary["ids"]) == len(set(summary["ids"])), "an event was received twice"
    assert summary["types"].count("response.done") == len(summary["answers"])
    assert summary["types"][:2] == ["session.created", "conversation.created"]
    assert summary["types"].count("session.created") == 1


def test_the_uncut_answer_is_whole(uncut: dict[str, Any]) -> None:
    assert uncut["reconnects"] == []
    assert len(uncut["answers"][0].split()) >= 30
    assert_one_clean_stream(uncut)


def test_a_connection_dropped_mid_answer_is_resumed_by_the_sdk(
    served: Served, uncut: dict[str, Any]
) -> None:
    summary = sdk(served, "cut", "3")
    assert summary["reconnects"] == [1006]
    assert summary["relayed_connections"] == 2
    assert summary["answers"] == uncut["answers"]
    assert_one_clean_stream(summary)


def test_two_drops_in_one_answer(served: Served, uncut: dict[str, Any]) -> None:
    summary = sdk(served, "cut", "2,20")
    assert summary["reconnects"] == [1006, 1006]
    assert summary["answers"] == uncut["answers"]
    assert_one_clean_stream(summary)


def test_a_voice_answer_dropped_mid_stream_is_resumed_whole(served: Served) -> None:
    whole = sdk(served, "voice")
    cut = sdk(served, "voice", "3")
    assert (whole["reconnects"], cut["reconnects"]) == ([], [1006])
    assert cut["answers"] == whole["answers"] and whole["answers"][0]
    assert cut["audio_bytes"] == whole["audio_bytes"] > 0
    assert_one_clean_stream(cut)


def test_a_resume_while_idle_goes_on_in_the_same_session(
    served: Served, uncut: dict[str, Any]
) -> None:
    summary = sdk(served, "idle")
    assert summary["reconnects"] == [1006]
    assert len(summary["answers"]) == 2
    assert summary["answers"][0] == uncut["answers"][0]
    assert summary["answers"][1]
    assert_one_clean_stream(summary)


async def test_a_dropped_connection_is_resumed_through_the_router(
    redis_url: str, served: Served, uncut: dict[str, Any], tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    keys.write_text(key_line("alice", served.alice) + "\n")
    flags = ("--api-keys-file", str(keys), "--store", redis_url, "--registry-interval", "0.2")
    flags += ("--answer-tokens", "40", "--decode-rate", "20")
    workers = [WorkerProcess(*flags, name=name).start() for name in ("rt-w1", "rt-w2")]
    router = RouterProcess(redis_url)
    try:
        await eventually(lambda: router.stats()["live_workers"] == 2)
        summary = await asyncio.to_thread(sdk, served, "cut", "3", url=router.url)
    finally:
        router.stop()
        for worker in workers:
            worker.stop()
    assert summary["reconnects"] == [1006]
    assert summary["answers"] == uncut["answers"]
    assert_one_clean_stream(summary)


# -- refusals, with raw frames ------------------------------------------------


async def open_session(served: Served, key: str) -> tuple[ClientConnection, dict[str, Any]]:
    """A new Realtime session; its connection and ``session.created``."""
    ws = await connect(
        served.worker.url + "/v1/realtime?model=m",
        additional_headers={"Authorization": f"Bearer {key}"},
        compression=None,
    )
    created = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert created["type"] == "session.created"
    assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "conversation.created"
    return ws, created


async def answered(ws: ClientConnection) -> list[dict[str, Any]]:
    """Ask for a text answer; every event up to its ``response.done``."""
    text = {"type": "session.update", "session": {"output_modalities": ["text"]}}
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    await ws.send(json.dumps(text))
    await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
    await ws.send(json.dumps({"type": "response.create"}))
    events = []
    while not events or events[-1]["type"] != "response.done":
        events.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
    return events


async def refused(
    served: Served, key: str, headers: dict[str, str], query: str = ""
) -> tuple[dict[str, Any], int | None]:
    """A resume handshake's answer: its one ``error`` event and the close code."""
    ws = await connect(
        served.worker.url + "/v1/realtime?model=m" + query,
        additional_headers={"Authorization": f"Bearer {key}", **headers},
        compression=None,
    )
    events = []
    with pytest.raises(ConnectionClosed):
        while True:
            events.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
    assert [event["type"] for event in events] == ["error"], events
    return events[0]["error"], ws.close_code


def resume_headers(created: dict[str, Any], last: str | None = None) -> dict[str, str]:
    headers = {
        "X-Wsserver-Session": created["resume"]["session_id"],
        "X-Wsserver-Resume-Token": created["resume"]["resume_token"],
    }
    if last is not None:
        headers["X-Wsserver-Last-Event-Id"] = last
    return headers


async def test_resumes_that_cannot_be_served_are_refused_never_a_fresh_session(
    served: Served,
) -> None:
    ws, created = await open_session(served, served.alice)
    events = await answered(ws)
    # rate_limits.updated follows response.done: the default message rate per principal.
    limits = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert limits["type"] == "rate_limits.updated"
    assert [(limit["name"], limit["limit"]) for limit in limits["rate_limits"]] == [
        ("requests", 2000)
    ]
    last = events[-1]["event_id"]
    ws.transport.abort()  # dropped, not closed: a close 1000 would end the session
    good = resume_headers(created, last)
    cases: list[tuple[str, dict[str, str], str, str]] = [
        (
            "wrong token",
            {**good, "X-Wsserver-Resume-Token": "rt_wrong"},
            "",
            "invalid_resume_token",
        ),
        ("unknown session", {**good, "X-Wsserver-Session": "sess_nope"}, "", "unknown_session"),
        ("malformed id", {**good, "X-Wsserver-Last-Event-Id": "event_x"}, "", "invalid_event_id"),
        ("id never sent", {**good, "X-Wsserver-Last-Event-Id": "event_999_0"}, "", "invalid_seq"),
        (
            "no token",
            {"X-Wsserver-Session": good["X-Wsserver-Session"]},
            "",
            "invalid_resume_request",
        ),
        ("token in query", {}, "&resume_token=x", "resume_token_in_query"),
    ]
    seq = int(last.split("_")[1])
    cases.append(
        (
            "index never sent",
            {**good, "X-Wsserver-Last-Event-Id": f"event_{seq}_7"},
            "",
            "invalid_event_id",
        )
    )
    for name, headers, query, code in cases:
        error, close_code = await refused(served, served.alice, headers, query)
        assert (error["code"], close_code) == (code, 1008), name
    # Another principal holding the right token learns nothing: as if unknown.
    error, close_code = await refused(served, served.bob, good)
    assert (error["code"], close_code) == ("unknown_session", 1008)
    # The refusals left the session resumable: the right headers still resume it.
    async with connect(
        served.worker.url + "/v1/realtime?model=m",
        additional_headers={"Authorization": f"Bearer {served.alice}", **good},
        compression=None,
    ) as resumed:
        again = await answered(resumed)
    # Answered from the core's session.updated, a session event: the dialect's own
    # item answers (connection events) may come before it.
    (updated,) = [event for event in again if event["type"] == "session.updated"]
    assert updated["session"]["id"] == created["session"]["id"]
    ids = [event["event_id"] for event in events + again]
    assert len(ids) == len(set(ids))


SESSION_EVENT_ID = re.compile(r"event_[0-9]+_[0-9]+")
"""The id of a session event (replayed on resume); the dialect's own answers add a tag."""


def session_events(events: list[dict[str, Any]]) -> list[str]:
    return [event["event_id"] for event in events if SESSION_EVENT_ID.fullmatch(event["event_id"])]


async def resumed_to_done(
    served: Served, created: dict[str, Any], last: str
) -> list[dict[str, Any]]:
    """Resume after the event ``last``; what comes up to a ``response.done`` or ``error``
    (the connection is then dropped, and the session stays resumable)."""
    async with connect(
        served.worker.url + "/v1/realtime?model=m",
        additional_headers={
            "Authorization": f"Bearer {served.alice}",
            **resume_headers(created, last),
        },
        compression=None,
    ) as resumed:
        events = [json.loads(await asyncio.wait_for(resumed.recv(), 10))]
        while events[-1]["type"] not in ("response.done", "error"):
            events.append(json.loads(await asyncio.wait_for(resumed.recv(), 10)))
        resumed.transport.abort()
    return events


async def test_a_client_that_missed_the_whole_last_answer_gets_it_on_resume(
    served: Served,
) -> None:
    ws, created = await open_session(served, served.alice)
    first = await answered(ws)
    limits = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert limits["type"] == "rate_limits.updated"
    # The next answer is written to its end, and the connection drops before the client
    # reads any of it (read here only to know what was written).
    missed = await answered(ws)
    ws.transport.abort()
    for last in (first[-1]["event_id"], limits["event_id"]):
        replayed = await resumed_to_done(served, created, last)
        assert [e for e in replayed if e["type"] == "error"] == [], (last, replayed)
        # Every session event of the missed answer, once, in order; nothing before it.
        assert session_events(replayed) == session_events(missed), last


@pytest.fixture(scope="module")
def small_replay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A replay buffer of 64 events; answers of 8 tokens (about 10 native events each)."""
    alice = new_api_key()
    keys = tmp_path_factory.mktemp("realtime-acks") / "keys"
    keys.write_text(key_line("alice", alice) + "\n")
    flags = ("--replay-max-events", "64", "--answer-tokens", "8", "--decode-rate", "400")
    flags += ("--messages-per-second-per-principal", "1", "--message-burst-per-principal", "500")
    worker = WorkerProcess("--api-keys-file", str(keys), *flags, name="realtime-acks").start()
    try:
        yield Served(worker, alice, alice)
    finally:
        worker.stop()


async def test_a_long_session_stays_resumable_as_the_dialect_acks_natively(
    small_replay: Served,
) -> None:
    # Twelve answers are about 120 native events: without acks the buffer (64) would
    # forget the point a rebuild starts from, and the resume would be refused.
    ws, created = await open_session(small_replay, small_replay.alice)
    for _ in range(12):
        await answered(ws)
    # The principal's message rate, after each response.done (3 messages a turn).
    limits = json.loads(await asyncio.wait_for(ws.recv(), 10))
    assert limits["type"] == "rate_limits.updated"
    [requests] = limits["rate_limits"]
    assert (requests["name"], requests["limit"]) == ("requests", 500)
    assert 500 - 36 - 12 <= requests["remaining"] <= 500 - 36
    assert requests["reset_seconds"] > 0
    ws.transport.abort()
    # The last id seen is rate_limits.updated's, not a session event's: it names the
    # response.done before it, so nothing is replayed.
    headers = resume_headers(created, limits["event_id"])
    async with connect(
        small_replay.worker.url + "/v1/realtime?model=m",
        additional_headers={"Authorization": f"Bearer {small_replay.alice}", **headers},
        compression=None,
    ) as resumed:
        again = await answered(resumed)
    assert [event["type"] for event in again].count("session.updated") == 1
    assert [event["type"] for event in again if event["type"] == "error"] == []
    assert again[-1]["response"]["status"] == "completed"


@pytest.fixture(scope="module")
def answers_near_the_bound(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A replay buffer of 64 events; answers of 22 tokens (about 25 native events each):
    two answers fit in it, three do not."""
    alice = new_api_key()
    keys = tmp_path_factory.mktemp("realtime-bound") / "keys"
    keys.write_text(key_line("alice", alice) + "\n")
    flags = ("--replay-max-events", "64", "--answer-tokens", "22", "--decode-rate", "100")
    worker = WorkerProcess("--api-keys-file", str(keys), *flags, name="realtime-bound").start()
    try:
        yield Served(worker, alice, alice)
    finally:
        worker.stop()


async def test_while_an_answer_runs_the_replay_holds_only_the_last_answer_before_it(
    answers_near_the_bound: Served,
) -> None:
    # Kept two answers back, the buffer would drop the quiet point a rebuild starts from
    # while the fourth answer runs on after the drop, and the resume would be refused.
    served = answers_near_the_bound
    ws, created = await open_session(served, served.alice)
    for _ in range(3):
        await answered(ws)
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
    await ws.send(json.dumps({"type": "response.create"}))
    # Cut past the 15th delta: by then the three answers' events would pass the bound.
    seen: list[dict[str, Any]] = []
    while sum(event["type"] == "response.output_text.delta" for event in seen) < 15:
        seen.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
    ws.transport.abort()
    rest = await resumed_to_done(served, created, seen[-1]["event_id"])
    assert [e for e in rest if e["type"] == "error"] == [], rest
    assert rest[-1]["response"]["status"] == "completed"
    ids = session_events(seen) + session_events(rest)
    assert len(ids) == len(set(ids)), "an event was received twice"


def test_the_resume_example_survives_a_dropped_connection(
    served: Served, uncut: dict[str, Any]
) -> None:
    example = HERE.parents[2] / "examples" / "realtime_resume.py"
    args = ["--url", served.worker.http + "/v1", "--api-key", served.alice, "--drop-after", "3"]
    args += ["--prompt", "Say something."]
    result = subprocess.run(
        [openai_sdk_python(), str(example), *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[connection lost (1006); resuming]" in result.stderr
    assert result.stdout == uncut["answers"][0] + "\n[completed]\n"

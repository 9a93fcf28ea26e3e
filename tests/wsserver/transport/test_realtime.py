"""``/v1/realtime`` against a real ``wsserver serve`` with API keys.

Most tests use the unmodified openai SDK as the client. It pins ``websockets<16``, so
it runs from its own Python (``WSSERVER_OPENAI_SDK_PYTHON``) as a subprocess; the
hostile-input test speaks raw frames with this environment's websockets.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.openai_sdk import openai_sdk_python
from tests.processes import WorkerProcess
from tests.wsserver.audio_fixtures import FIXTURES
from wsserver.frontdoor.api_keys import key_line, new_api_key

HERE = Path(__file__).parent


def start_worker(
    tmp_path_factory: pytest.TempPathFactory, *flags: str
) -> tuple[WorkerProcess, str]:
    """A worker with one API key, and that key."""
    key = new_api_key()
    keys = tmp_path_factory.mktemp("realtime") / "keys"
    keys.write_text(key_line("alice", key) + "\n")
    worker = WorkerProcess("--api-keys-file", str(keys), *flags, name="realtime-worker")
    return worker.start(), key


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WorkerProcess, str]]:
    """Short answers (8 tokens, 50 a second)."""
    worker, key = start_worker(tmp_path_factory, "--answer-tokens", "8", "--decode-rate", "50")
    try:
        yield worker, key
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def served_slowly(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[WorkerProcess, str]]:
    """Answers that stream for 10 s (200 tokens, 20 a second): time to barge in."""
    worker, key = start_worker(tmp_path_factory, "--answer-tokens", "200", "--decode-rate", "20")
    try:
        yield worker, key
    finally:
        worker.stop()


def sdk(
    mode: str, worker: WorkerProcess, key: str, *extra: str, script: str = "realtime_sdk_turns.py"
) -> subprocess.CompletedProcess[str]:
    """Run one mode of an SDK script (realtime_sdk_turns.py) with the SDK's python."""
    script = str(HERE / script)
    return subprocess.run(
        [openai_sdk_python(), script, mode, worker.http + "/v1", key, *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )


def summary_of(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-3000:]
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary


def test_sdk_text_turn(served: tuple[WorkerProcess, str]) -> None:
    worker, key = served
    summary = summary_of(sdk("text", worker, key))
    types = summary["types"]
    assert types[0] == "session.created"
    assert summary["session_id"].startswith("sess_")
    assert types[-1] == "response.done"
    assert types.count("response.done") == 1
    assert "response.output_audio.delta" not in types
    for expected in (
        "session.updated",
        "conversation.item.added",
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ):
        assert expected in types
    assert summary["status"] == "completed"
    assert summary["text"] and summary["output_text"] == [summary["text"]]
    assert summary["output_tokens"] == 8
    assert summary["total_tokens"] == summary["input_tokens"] + 8


def test_sdk_with_a_wrong_key_is_refused(served: tuple[WorkerProcess, str]) -> None:
    worker, _ = served
    result = sdk("text", worker, new_api_key())
    assert result.returncode != 0
    assert "401" in result.stderr


def test_sdk_cancel_ends_the_response_cancelled(served: tuple[WorkerProcess, str]) -> None:
    summary = summary_of(sdk("cancel", *served))
    assert (summary["status"], summary["reason"]) == ("cancelled", "client_cancelled")
    assert summary["types"].count("response.done") == 1
    assert summary["output_tokens"] < 8


def test_sdk_tool_call_ends_its_response_and_the_next_create_answers(
    served: tuple[WorkerProcess, str],
) -> None:
    summary = summary_of(sdk("tool", *served))
    assert "errors" not in summary
    assert summary["call"] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    calling, answer = summary["responses"]
    # As in the Realtime API: the response that calls ends completed, the call in its output.
    assert (calling["status"], calling["details"]) == ("completed", None)
    assert calling["output_types"] == ["function_call"]
    assert calling["output_tokens"] > 0
    # The output alone started nothing: only its own items came before the marker.
    after = summary["after_output_done"]
    assert after[-2:] == ["conversation.item.added", "conversation.item.done"]
    assert "response.created" not in after
    assert answer["status"] == "completed"
    assert answer["output_types"] == ["message"]
    assert '{"temp_c": 21}' in answer["text"]
    # The answer's prompt holds the call and its output.
    assert answer["input_tokens"] > calling["input_tokens"]


def test_sdk_spoken_turn_with_server_vad_is_answered_by_voice(
    served: tuple[WorkerProcess, str],
) -> None:
    speech = str(FIXTURES / "speech_hello.wav")
    summary = summary_of(sdk("audio", *served, speech))
    types = summary["types"]
    turn = [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
        "response.created",
    ]
    assert types[1] == "conversation.created"
    assert types[2:8] == turn
    assert "response.output_audio.delta" in types
    assert "response.output_text.delta" not in types
    assert summary["audio_bytes"] > 0
    assert summary["text"]
    assert summary["status"] == "completed"


def test_sdk_barge_in_cancels_the_answer_with_turn_detected(
    served_slowly: tuple[WorkerProcess, str],
) -> None:
    speech = str(FIXTURES / "speech_hello.wav")
    summary = summary_of(sdk("barge_in", *served_slowly, speech))
    assert (summary["status"], summary["reason"]) == ("cancelled", "turn_detected")
    types = summary["types"]
    assert types.count("input_audio_buffer.speech_started") == 2
    # The answer's items end before its response.done, as incomplete.
    assert types[-3:] == ["response.output_item.done", "conversation.item.done", "response.done"]


async def test_bad_frames_get_realtime_errors_and_the_session_goes_on(
    served: tuple[WorkerProcess, str],
) -> None:
    worker, key = served
    headers = {"Authorization": f"Bearer {key}"}
    url = worker.url + "/v1/realtime?model=m"
    async with connect(url, additional_headers=headers, compression=None) as ws:
        created = json.loads(await ws.recv())
        assert created["type"] == "session.created"
        assert json.loads(await ws.recv())["type"] == "conversation.created"
        bad: list[str | bytes] = [
            b"\x01\x00binary",
            "{not json",
            json.dumps({"type": "conversation.item.delete", "item_id": "x", "event_id": "d1"}),
            json.dumps({"type": "input_audio_buffer.append", "audio": "@@@@"}),
            json.dumps({"type": "no.such.event"}),
            json.dumps([1, 2, 3]),
        ]
        for frame in bad:
            await ws.send(frame)
            answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert answer["type"] == "error", answer
            assert set(answer["error"]) == {"type", "code", "message", "param", "event_id"}
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}],
        }
        await ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        await ws.send(json.dumps({"type": "response.create"}))
        seen: list[str] = []
        while "response.done" not in seen:
            seen.append(json.loads(await asyncio.wait_for(ws.recv(), 10))["type"])
        assert seen[:3] == ["conversation.item.added", "conversation.item.done", "response.created"]
        # A frame over the worker's frame limit (1 MiB by default) is abuse: closed, 1009.
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": "A" * 1_100_000}))
        with pytest.raises(ConnectionClosed):
            while True:
                await asyncio.wait_for(ws.recv(), 10)
        assert ws.close_code == 1009


async def test_a_realtime_handshake_without_credentials_is_refused(
    served: tuple[WorkerProcess, str],
) -> None:
    worker, _ = served
    with pytest.raises(InvalidStatus) as refused:
        async with connect(worker.url + "/v1/realtime"):
            pass
    assert refused.value.response.status_code == 401


def test_sdk_truncate_cuts_the_history_to_what_was_played(
    served_slowly: tuple[WorkerProcess, str],
) -> None:
    # The same interrupted voice answer, kept as sent or truncated to 0 ms: the next
    # turn's prompt (its input_tokens) shows what the history kept.
    kept = summary_of(sdk("truncate", *served_slowly, "none"))
    cut = summary_of(sdk("truncate", *served_slowly, "0"))
    assert kept["truncated"] == []
    assert cut["truncated"] == [[cut["first"]["item_id"], 0, 0]]
    for summary in (kept, cut):
        assert summary["first"]["status"] == "cancelled"
        assert "errors" not in summary
    assert cut["second_input_tokens"] < kept["second_input_tokens"]


def _prompt_tokens(*texts: str) -> int:
    """What the simulated engine counts for a prompt of these turns (words + 4 each)."""
    return sum(len(text.split()) + 4 for text in texts)


def test_sdk_text_only_session_with_instructions_and_a_per_response_override(
    served: tuple[WorkerProcess, str],
) -> None:
    summary = summary_of(sdk("instructions", *served, script="realtime_sdk_settings.py"))
    pirate, brief = "Answer like a pirate would.", "Be brief."
    assert summary["updated"] == {"instructions": pirate, "output_modalities": ["text"]}
    first, second = summary["first"], summary["second"]
    for answer in (first, second):
        assert answer["status"] == "completed"
        assert answer["output_modalities"] == ["text"]
        assert "response.output_text.delta" in answer["types"]
        assert not [kind for kind in answer["types"] if "audio" in kind]
        assert (answer["output_tokens"], answer["audio_tokens"]) == (8, 0)
    # The session's instructions reached the engine: they are in the prompt it counted.
    assert first["input_tokens"] == _prompt_tokens(pirate, "Say something.")
    # The override replaced them for its response only.
    history = ("Say something.", first["text"], "Again.")
    assert second["input_tokens"] == _prompt_tokens(brief, *history)


def test_sdk_turn_detection_null_leaves_commit_and_response_to_the_client(
    served: tuple[WorkerProcess, str],
) -> None:
    speech = str(FIXTURES / "speech_hello.wav")
    summary = summary_of(sdk("manual", *served, speech, script="realtime_sdk_settings.py"))
    assert summary["turn_detection"] is None
    before = summary["before_create"]
    # No detector: no speech_started; the commit makes the item, and no response of its own.
    assert "input_audio_buffer.speech_started" not in before
    assert before[:3] == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert "response.created" not in before
    answer = summary["answer"]
    assert answer["status"] == "completed"
    assert "response.output_audio.delta" in answer["types"]

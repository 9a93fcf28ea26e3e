"""``wsserver chat --audio-in FILE.wav``: a WAV file as the microphone.

The file is streamed at real-time pace (20 ms chunks) followed by a second of
silence, so server VAD ends the turn. With a PROMPT, the prompt is asked first
and the file starts ``--audio-delay`` seconds into the spoken answer: a barge-in.
Received audio "plays" at real-time speed (and is reported to the server as
played); ``--audio-out`` writes it to a WAV file. Exits 0 once the answer to the
spoken turn is done.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import wave
from pathlib import Path
from typing import Any

from wsserver.cli.session_opening import CommandFailed, opened_client
from wsserver.client import SessionClient, SessionClosed

_TRAILING_SILENCE_MS = 1000
_NO_TURN_TIMEOUT_S = 5.0


class AudioFileError(Exception):
    """The input file is not a WAV the server takes."""


def read_wav(path: Path) -> tuple[bytes, int]:
    """PCM16 mono samples and rate of a WAV file (16 or 24 kHz)."""
    try:
        with wave.open(str(path)) as wav:
            shape = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate())
            frames = wav.readframes(wav.getnframes())
    except (OSError, wave.Error, EOFError) as exc:
        raise AudioFileError(f"cannot read {path}: {exc or 'not a wav file'}") from exc
    channels, width, rate = shape
    if channels != 1 or width != 2 or rate not in (16000, 24000):
        raise AudioFileError(
            f"{path} is {channels} channel(s), {8 * width}-bit, {rate} Hz; "
            "the server takes mono 16-bit PCM at 16000 or 24000 Hz"
        )
    return frames, rate


def write_wav(path: Path, pcm: bytes, rate: int) -> None:
    """Write PCM16 mono to a WAV file."""
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm)


def _describe(event: dict[str, Any], audio_ms: dict[str, float], rate: int) -> str | None:
    kind = event.get("type")
    if kind == "input_audio.speech_started":
        return f"\n[speech started at {event['audio_start_ms'] / 1000:.2f} s]"
    if kind == "input_audio.speech_stopped":
        return f"[speech stopped at {event['audio_end_ms'] / 1000:.2f} s]"
    if kind == "input_audio.committed":
        return f"[turn committed: {event['duration_ms'] / 1000:.2f} s of audio]"
    if kind == "input_audio.transcript" and event.get("final"):
        return f"you said: {event['text']}"
    if kind == "input_audio.discarded":
        return f"[speech too short for a turn ({event['reason']})]"
    if kind == "response.audio.delta":
        response_id = event["response_id"]
        audio_ms[response_id] = audio_ms.get(response_id, 0.0) + len(event["audio"]) / (
            rate * 2 / 1000
        )
        return None
    if kind == "response.done":
        reason = f" ({event['reason']})" if event.get("reason") else ""
        played = f", heard {event['played_ms'] / 1000:.2f} s" if "played_ms" in event else ""
        received = audio_ms.get(event["response_id"], 0.0) / 1000
        return f"\n[{event['status']}{reason}; audio received {received:.2f} s{played}]"
    if kind == "error":
        return f"\n[error {event.get('code')}: {event.get('message')}]"
    return None


async def run_voice_chat(args: argparse.Namespace) -> int:
    """Stream the file as the microphone; exit 0 when its turn is answered."""
    try:
        pcm, rate = read_wav(Path(args.audio_in))
    except AudioFileError as exc:
        print(f"wsserver chat: {exc}", file=sys.stderr)
        return 2
    detection: dict[str, Any] = {"type": args.turn_detection}
    try:
        client = await opened_client(
            args, audio={"sample_rate": rate, "turn_detection": detection}, simulate_playback=True
        )
    except CommandFailed as failed:
        return failed.status
    try:
        return await _talk(client, args, pcm, rate)
    finally:
        await client.close()


async def _talk(client: SessionClient, args: argparse.Namespace, pcm: bytes, rate: int) -> int:
    manual = args.turn_detection == "manual"
    if args.prompt is not None:
        await client.create_response(args.prompt)
    delay = args.audio_delay if args.audio_delay is not None else (1.0 if args.prompt else 0.0)

    async def microphone() -> None:
        await asyncio.sleep(delay)
        trailing = bytes(rate * 2 * _TRAILING_SILENCE_MS // 1000)
        await client.stream_audio(pcm + (b"" if manual else trailing), last=manual)

    mic = asyncio.create_task(microphone())
    audio_ms: dict[str, float] = {}
    received: dict[str, list[bytes]] = {}
    turn_committed = False
    answer_id: str | None = None
    try:
        while True:
            timeout = None if not mic.done() or turn_committed else _NO_TURN_TIMEOUT_S
            try:
                event = await client.next_event(timeout)
            except TimeoutError:
                print("\nwsserver chat: no spoken turn was detected in the file", file=sys.stderr)
                return 1
            kind = event.get("type")
            if kind == "response.text.delta":
                print(event["delta"], end="", flush=True)
            elif kind == "response.audio.delta":
                received.setdefault(event["response_id"], []).append(event["audio"])
            line = _describe(event, audio_ms, rate)
            if line is not None:
                print(line, flush=True)
            if kind == "input_audio.committed":
                turn_committed = True
            elif kind == "response.created" and turn_committed:
                answer_id = event["response_id"]
            elif answer_id is not None and kind == "response.done":
                if event["response_id"] != answer_id:
                    continue
                if args.audio_out:
                    write_wav(Path(args.audio_out), b"".join(received.get(answer_id, [])), rate)
                return 0 if event.get("status") in ("completed", "incomplete") else 1
            elif kind in ("error", "response.truncated"):
                return 1
    except SessionClosed as exc:
        print(f"\nwsserver chat: {exc}", file=sys.stderr)
        return 1
    finally:
        mic.cancel()

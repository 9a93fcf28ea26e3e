"""A loopback HTTP server speaking the OpenAI audio wire format, backed by the real models.

``POST /<mode>/v1/audio/transcriptions`` takes the multipart form (``file``,
``model``, ``language``, ``response_format``) and answers ``{"text": ...}`` from
Whisper; ``POST /<mode>/v1/audio/speech`` takes the JSON body and streams piper's
speech as ``pcm`` (24 kHz PCM16) or ``wav`` (a streaming header: sizes unknown),
chunked, a sentence at a time, as Kokoro-FastAPI does. ``<mode>`` makes it hostile
instead: ``error`` (500 with an error JSON), ``huge`` (a body that never ends),
``stall`` (headers, then nothing), ``html`` (a page where JSON or audio belongs),
``badjson``, ``badutf8``, ``notext``, ``badwav`` (a stereo WAV), ``reset`` (the connection dropped
mid-body).
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import json
import struct
import threading
import time
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from tests.wsserver.speech_models import piper_voice, whisper_model
from wsserver.engine.pipeline.pcm import Resampler


class SpeechServer:
    """The server, on a free loopback port, in a thread."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        handler = type("Handler", (_Handler,), {"owner": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, mode: str = "real") -> str:
        """The base URL (up to ``/v1``) of one mode."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{mode}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    owner: SpeechServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test output clean

    def do_POST(self) -> None:
        mode, _, endpoint = self.path.strip("/").partition("/v1/")
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        record: dict[str, Any] = {
            "endpoint": endpoint,
            "authorization": self.headers.get("Authorization"),
            "content_type": self.headers.get("Content-Type", ""),
        }
        self.owner.requests.append(record)
        try:
            if endpoint == "audio/transcriptions":
                self._transcription(mode, body, record)
            elif endpoint == "audio/speech":
                self._speech(mode, json.loads(body), record)
            else:
                self._send(404, "application/json", b'{"error": {"message": "no such route"}}')
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away: what an abort looks like from here

    # -- the two endpoints ----------------------------------------------------------

    def _transcription(self, mode: str, body: bytes, record: dict[str, Any]) -> None:
        form = _multipart(record["content_type"], body)
        record["form"] = {k: v for k, v in form.items() if k != "file"}
        record["file"] = form.get("file")
        if self._hostile(mode, "application/json"):
            return
        if mode == "badjson":
            self._send(200, "application/json", b"{not json")
            return
        if mode == "badutf8":
            self._send(200, "application/json", b'{"text": "caf\xe9 \xff"}')
            return
        if mode == "notext":
            self._send(200, "application/json", b'{"transcript": "wrong field"}')
            return
        data = form["file"][2]
        with wave.open(io.BytesIO(data)) as wav:
            rate = wav.getframerate()
            samples = np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16)
        record["wav_rate"] = rate
        waveform = samples.astype(np.float32) / 32768.0
        segments, _ = whisper_model().transcribe(waveform, language=form.get("language"))
        text = "".join(segment.text for segment in segments)
        self._send(200, "application/json", json.dumps({"text": text}).encode())

    def _speech(self, mode: str, request: dict[str, Any], record: dict[str, Any]) -> None:
        record["json"] = request
        audio_type = "audio/pcm" if request.get("response_format") == "pcm" else "audio/wav"
        if self._hostile(mode, audio_type):
            return
        if mode == "badwav":
            header = _wav_header(24000, channels=2)
            self._send(200, "audio/wav", header + b"\x00" * 4000)
            return
        from piper.config import SynthesisConfig

        voice = piper_voice()
        # Without sampling noise: the same text is the same audio every time.
        steady = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
        self._start_chunked(200, audio_type)
        if audio_type == "audio/wav":
            native = int(voice.config.sample_rate)
            self._chunk(_wav_header(native))
            for sentence in voice.synthesize(request["input"], steady):
                self._chunk(sentence.audio_int16_bytes)
        else:
            resampler = Resampler(int(voice.config.sample_rate), 24000)
            for sentence in voice.synthesize(request["input"], steady):
                # Odd-sized pieces, as a network splits them: the client must cope.
                data = resampler.feed(sentence.audio_int16_bytes)
                for start in range(0, len(data), 4001):
                    self._chunk(data[start : start + 4001])
            self._chunk(resampler.feed(b"", last=True))
        self._end_chunked()

    # -- hostile answers ----------------------------------------------------------------

    def _hostile(self, mode: str, kind: str) -> bool:
        if mode == "error":
            message = b'{"error": {"message": "model not loaded", "type": "server_error"}}'
            self._send(500, "application/json", message)
        elif mode == "html":
            self._send(200, "text/html", b"<html><body>Welcome to nginx!</body></html>")
        elif mode == "huge":
            self._start_chunked(200, kind)
            block = b"7" * 65536
            for _ in range(2000):  # 128 MB at most: the client must stop far earlier
                self._chunk(block)
            self._end_chunked()
        elif mode == "stall":
            self._start_chunked(200, kind)
            time.sleep(5)
        elif mode == "reset":
            self._start_chunked(200, kind)
            self._chunk(b"\x01\x00" * 1000)
            self.wfile.flush()
            self.connection.shutdown(2)
        else:
            return False
        return True

    # -- HTTP ----------------------------------------------------------------------------

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _start_chunked(self, status: int, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _multipart(content_type: str, body: bytes) -> dict[str, Any]:
    """The form's fields (text) and files (``(filename, type, bytes)``)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    fields: dict[str, Any] = {}
    for part in message.iter_parts():  # type: ignore[attr-defined]
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        filename = part.get_filename()
        if filename is not None:
            fields[name] = (filename, part.get_content_type(), payload)
        else:
            fields[name] = payload.decode()
    return fields


def _wav_header(rate: int, channels: int = 1) -> bytes:
    """A streaming WAV header: the sizes are unknown (0xFFFFFFFF), as servers send it."""
    fmt = struct.pack("<HHIIHH", 1, channels, rate, rate * 2 * channels, 2 * channels, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 0xFFFFFFFF)
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", 0xFFFFFFFF)
    )

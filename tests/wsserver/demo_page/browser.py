"""A real Chromium (Debian's, driven by its chromedriver) for the demo page tests, and a
loopback relay between it and a worker that a test can cut like a network.

The microphone is Chromium's fake capture device looping a file, or, where a test must
speak at a moment of its choosing (over an answer that is playing, however long the
machine took to get there), a scripted one: ``getUserMedia`` gives the page a stream that
is silent until :func:`say` plays a sentence into it."""

from __future__ import annotations

import base64
import contextlib
import shutil
import socket
import threading
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
AUDIO = Path(__file__).parents[2] / "fixtures" / "audio"


def spoken_turn_wav(folder: Path, speech: bytes | None = None, quiet: float = 2.5) -> Path:
    """A sentence, then ``quiet`` seconds of silence: the fake microphone loops it, so the
    user speaks a turn every few seconds (and, while an answer plays, talks over it).

    ``speech`` is PCM16 mono at 16 kHz (default: the recorded "hello" sentence)."""
    out = folder / "turns.wav"
    with wave.open(str(AUDIO / "speech_hello.wav")) as recorded:
        params = recorded.getparams()
        frames = recorded.readframes(recorded.getnframes())
    if speech is not None:
        assert params.framerate == 16000 and params.nchannels == 1, params
        frames = speech
    with wave.open(str(out), "wb") as target:
        target.setparams(params)
        target.writeframes(frames + b"\0\0" * int(params.framerate * quiet))
    return out


# Replaces the browser's microphone, not the page's code: the page's capture asks
# getUserMedia as it always does and gets a live, silent track that say() speaks into.
SCRIPTED_MICROPHONE = r"""
(() => {
  let context;
  const destinations = [];
  const microphone = { spoken: 0 };
  microphone.say = (base64, rate) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const pcm = new Int16Array(bytes.buffer);
    const buffer = context.createBuffer(1, pcm.length, rate);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < pcm.length; i++) channel[i] = pcm[i] / 32768;
    for (const destination of destinations) {
      const source = context.createBufferSource();
      source.buffer = buffer;
      source.connect(destination);
      source.start();
    }
    microphone.spoken += 1;
  };
  window.scriptedMicrophone = microphone;
  MediaDevices.prototype.getUserMedia = async function (constraints) {
    if (!constraints?.audio) throw new DOMException("only a microphone here", "NotFoundError");
    context ??= new AudioContext();
    await context.resume();
    const destination = context.createMediaStreamDestination();
    destinations.push(destination);
    return destination.stream;
  };
})();
"""


def chromium(microphone_wav: Path | None = None) -> webdriver.Chrome:
    """Headless Chromium with a fake microphone playing ``microphone_wav`` in a loop, or
    (without one) the scripted microphone that speaks only on :func:`say`."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",  # root in CI containers
        "--disable-dev-shm-usage",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        "--autoplay-policy=no-user-gesture-required",
        "--window-size=900,760",
    ):
        options.add_argument(flag)
    if microphone_wav is not None:
        options.add_argument(f"--use-file-for-fake-audio-capture={microphone_wav}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    if microphone_wav is None:
        driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": SCRIPTED_MICROPHONE}
        )
    return driver


def say(driver: webdriver.Chrome, speech: bytes, rate: int = 16000) -> None:
    """Speak ``speech`` (PCM16 mono at ``rate``) into the scripted microphone, now."""
    script = "window.scriptedMicrophone.say(arguments[0], arguments[1])"
    driver.execute_script(script, base64.b64encode(speech).decode("ascii"), rate)


def poll(what: str, check: Callable[[], Any], timeout: float = 20.0) -> Any:
    """``check()``'s first truthy value, polled (a correctness bound, not a speed one)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Relay:
    """A TCP relay on a free loopback port to ``target``; :meth:`cut` drops every
    connection through it at once, as a network change does, and keeps listening."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:  # the worker is gone (teardown): refuse this one too
                client.close()
                continue
            with self.lock:
                self.connections += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """End every relayed connection (no WebSocket close handshake reaches either side)."""
        with self.lock:
            connections, self.connections = self.connections, []
        for s in connections:
            # shutdown() wakes the pump blocked in recv() (a bare close() would not, and
            # the connection would live on); both peers see TCP end without a close frame.
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.cut()
        self.listener.close()

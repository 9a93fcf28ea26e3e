/** Input audio: chunks of 10-100 ms, numbered, the last second kept for a resend. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeAudioFrame } from "../src/audio_frame.js";
import { floatToPcm16, Microphone } from "../src/microphone.js";

const ms = (n: number): Uint8Array => new Uint8Array(32 * n); // 16 kHz PCM16: 32 bytes a ms

test("audio of any length goes out in numbered chunks of at most 100 ms", () => {
  const mic = new Microphone(16000);
  const frames = mic.frames(ms(250)).map(decodeAudioFrame);
  assert.deepEqual(frames.map((f) => [f.seq, f.payload.byteLength, f.last]), [[0, 3200, false], [1, 3200, false], [2, 1600, false]]);
});

test("under 10 ms waits for the next call; last pads it to 10 ms and flags it", () => {
  const mic = new Microphone(16000);
  assert.deepEqual(mic.frames(ms(5)), []);
  const [frame] = mic.frames(ms(3), true).map(decodeAudioFrame);
  assert.equal(frame?.payload.byteLength, 320);
  assert.equal(frame?.last, true);
  assert.equal(mic.nextSeq, 1);
});

test("the resend window holds the last second, above the server's seq", () => {
  const mic = new Microphone(16000);
  for (let i = 0; i < 30; i++) mic.frames(ms(100));
  const kept = mic.resendAfter(-1).map(decodeAudioFrame);
  assert.deepEqual(kept.map((f) => f.seq), [20, 21, 22, 23, 24, 25, 26, 27, 28, 29]);
  assert.deepEqual(mic.resendAfter(27).map((f) => decodeAudioFrame(f).seq), [28, 29]);
});

test("float samples become little-endian PCM16, clamped", () => {
  assert.deepEqual([...floatToPcm16(Float32Array.from([0, 1, -1, 2]))], [0, 0, 0xff, 0x7f, 0x00, 0x80, 0xff, 0x7f]);
});

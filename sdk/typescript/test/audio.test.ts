/** Browser audio, the parts that run without a browser: resampling, playback accounting, and the worklet processors themselves in a stub audio scope. */
import assert from "node:assert/strict";
import { test } from "node:test";
import vm from "node:vm";

import { PlaybackTracker } from "../src/audio/playback.js";
import { pcm16ToFloat, Resampler } from "../src/audio/resampler.js";
import { CAPTURE_PROCESSOR, PLAYBACK_PROCESSOR, PROCESSORS_SOURCE } from "../src/audio/worklets.js";

const ramp = (n: number): Float32Array => Float32Array.from({ length: n }, (_, i) => i / n);

test("48 kHz to 16 kHz keeps every third sample; chunked input gives the same output as one buffer", () => {
  const input = ramp(4800);
  const whole = new Resampler(48000, 16000).push(input);
  assert.equal(whole.length, 1600);
  assert.equal(whole[1], input[3]);
  const chunked = new Resampler(48000, 16000);
  const parts: number[] = [];
  for (let i = 0; i < input.length; i += 128) parts.push(...chunked.push(input.subarray(i, i + 128)));
  assert.deepEqual(parts, [...whole]);
});

test("44.1 kHz to 16 kHz interpolates between neighbours, and up-sampling 24 kHz to 48 kHz doubles", () => {
  const out = new Resampler(44100, 16000).push(ramp(44100));
  assert.ok(Math.abs(out.length - 16000) <= 1, `${out.length} samples`);
  const up = new Resampler(24000, 48000).push(Float32Array.from([0, 1, 0]));
  assert.deepEqual([...up], [0, 0.5, 1, 0.5, 0]);
  assert.throws(() => new Resampler(0, 16000), RangeError);
});

test("PCM16 bytes become floats in [-1, 1)", () => {
  assert.deepEqual([...pcm16ToFloat(Uint8Array.from([0, 0, 0xff, 0x7f, 0x00, 0x80]))], [0, 32767 / 32768, -1]);
});

test("the tracker turns played samples into heard milliseconds per response, in queue order", () => {
  const tracker = new PlaybackTracker(16000);
  tracker.enqueue("resp_1", 1600);
  tracker.enqueue("resp_1", 1600);
  tracker.enqueue("resp_2", 3200);
  assert.deepEqual(tracker.played(2400), ["resp_1"]);
  assert.equal(tracker.playedMs("resp_1"), 150);
  assert.deepEqual(tracker.played(4000), ["resp_1", "resp_2"]);
  assert.equal(tracker.playedMs("resp_1"), 200);
  assert.equal(tracker.playedMs("resp_2"), 50);
  assert.equal(tracker.current, "resp_2");
  tracker.flushed();
  assert.equal(tracker.current, undefined);
  tracker.enqueue("resp_3", 1600);
  assert.deepEqual(tracker.played(160), ["resp_3"], "after a flush the worklet counts from zero");
  assert.equal(tracker.playedMs("resp_3"), 10);
});

/** Load the processors into a stub AudioWorkletGlobalScope. */
function loadProcessors(rate: number) {
  const registered = new Map<string, new () => { port: FakePort; process(inputs: Float32Array[][], outputs: Float32Array[][]): boolean }>();
  class FakePort {
    readonly posted: unknown[] = [];
    onmessage: ((event: { data: unknown }) => void) | undefined;
    postMessage(message: unknown): void {
      this.posted.push(message);
    }
  }
  class AudioWorkletProcessor {
    readonly port = new FakePort();
  }
  const scope = { AudioWorkletProcessor, sampleRate: rate, registerProcessor: (name: string, cls: never) => registered.set(name, cls) };
  vm.runInNewContext(PROCESSORS_SOURCE, scope);
  return registered;
}

test("the capture processor posts the microphone in 20 ms batches", () => {
  const Capture = loadProcessors(48000).get(CAPTURE_PROCESSOR);
  assert.ok(Capture);
  const node = new Capture();
  for (let i = 0; i < 16; i++) assert.equal(node.process([[new Float32Array(128).fill(i)]], []), true);
  // 16 × 128 = 2048 samples: two batches of 960, 128 left over.
  assert.deepEqual(node.port.posted.map((b) => (b as Float32Array).length), [960, 960]);
  assert.equal((node.port.posted[1] as Float32Array)[0], 7);
});

test("the playback processor plays its queue in order, reports what it played, and a flush silences it at once", () => {
  const Playback = loadProcessors(16000).get(PLAYBACK_PROCESSOR);
  assert.ok(Playback);
  const node = new Playback();
  node.port.onmessage?.({ data: { type: "samples", samples: new Float32Array(200).fill(0.5) } });
  node.port.onmessage?.({ data: { type: "samples", samples: new Float32Array(200).fill(0.25) } });
  const out = [new Float32Array(128)];
  node.process([], [out]);
  assert.equal(out[0]?.[127], 0.5);
  node.process([], [out]);
  assert.deepEqual([out[0]?.[71], out[0]?.[72]], [0.5, 0.25]);
  node.port.onmessage?.({ data: { type: "flush" } });
  node.process([], [out]);
  assert.ok(out[0]?.every((s) => s === 0), "silence right after the flush");
  for (let i = 0; i < 8; i++) node.process([], [out]); // past the ~50 ms report interval
  const played = node.port.posted.filter((m) => (m as { type: string }).type === "played") as Array<{ samples: number }>;
  assert.equal(node.port.posted.filter((m) => (m as { type: string }).type === "flushed").length, 1);
  assert.equal(played[played.length - 1]?.samples, 0, "the count starts again after a flush");
});

/** The binary audio frame codec, against the header bytes captured in docs/PROTOCOL.md. */
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AUDIO_IN,
  AUDIO_OUT,
  AudioFrameError,
  decodeAudioFrame,
  encodeAudioFrame,
  isAudioFrame,
  responseStreamId,
  streamResponseId,
} from "../src/audio_frame.js";

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex");

test("the header of the documented output frame (kind 2, stream 1, seq 3)", () => {
  const frame = encodeAudioFrame({ kind: AUDIO_OUT, streamId: 1, seq: 3, payload: new Uint8Array(4), last: false });
  assert.equal(hex(frame.subarray(0, 16)), "02000000010000000300000000000000");
  assert.equal(frame.byteLength, 20);
});

test("an input chunk flagged last, with a seq beyond 32 bits, round-trips", () => {
  const payload = Uint8Array.from([1, 2, 3, 4, 0xff, 0x7f]);
  const seq = 2 ** 40 + 5;
  const frame = encodeAudioFrame({ kind: AUDIO_IN, streamId: 0, seq, payload, last: true });
  assert.equal(hex(frame.subarray(0, 16)), "01010000000000000500000000010000");
  const decoded = decodeAudioFrame(frame);
  assert.deepEqual(
    { kind: decoded.kind, streamId: decoded.streamId, seq: decoded.seq, last: decoded.last },
    { kind: AUDIO_IN, streamId: 0, seq, last: true },
  );
  assert.equal(hex(decoded.payload), hex(payload));
});

test("a frame inside a larger buffer decodes from its own offset", () => {
  const inner = encodeAudioFrame({ kind: AUDIO_OUT, streamId: 7, seq: 9, payload: Uint8Array.from([9, 8]), last: false });
  const outer = new Uint8Array(inner.byteLength + 3);
  outer.set(inner, 3);
  const decoded = decodeAudioFrame(outer.subarray(3));
  assert.equal(decoded.streamId, 7);
  assert.equal(decoded.seq, 9);
  assert.equal(hex(decoded.payload), "0908");
});

test("bad frames are refused, as the server refuses them", () => {
  const good = encodeAudioFrame({ kind: AUDIO_OUT, streamId: 1, seq: 1, payload: new Uint8Array(2), last: false });
  const cases: Array<[Uint8Array, RegExp]> = [
    [good.subarray(0, 15), /shorter than its header/],
    [Uint8Array.from([3, ...good.subarray(1)]), /unknown audio frame kind 3/],
    [Uint8Array.from([2, 2, ...good.subarray(2)]), /reserved bits/],
    [Uint8Array.from([2, 0, 1, ...good.subarray(3)]), /reserved bits/],
    [Uint8Array.from([...good, 0]), /whole pcm16 samples/],
  ];
  for (const [frame, message] of cases) assert.throws(() => decodeAudioFrame(frame), (e: unknown) => e instanceof AudioFrameError && message.test(e.message));
  assert.throws(() => encodeAudioFrame({ kind: AUDIO_IN, streamId: 0, seq: 0, payload: new Uint8Array(3), last: false }), AudioFrameError);
  assert.throws(() => encodeAudioFrame({ kind: AUDIO_IN, streamId: 0, seq: -1, payload: new Uint8Array(2), last: false }), AudioFrameError);
});

test("audio frames are told from msgpack maps by their first byte", () => {
  assert.ok(isAudioFrame(Uint8Array.from([1])));
  assert.ok(isAudioFrame(Uint8Array.from([2])));
  assert.ok(!isAudioFrame(Uint8Array.from([0x81])));
  assert.ok(!isAudioFrame(new Uint8Array(0)));
});

test("response ids and stream ids", () => {
  assert.equal(responseStreamId("resp_7"), 7);
  assert.equal(streamResponseId(12), "resp_12");
  assert.throws(() => responseStreamId("resp_x"), AudioFrameError);
});

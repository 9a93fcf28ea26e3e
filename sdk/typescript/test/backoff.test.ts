/** Jittered exponential backoff: bounds double from 0.1 s up to the 5 s cap. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { Backoff } from "../src/backoff.js";

test("the bound doubles from base up to the cap", () => {
  const backoff = new Backoff();
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].map((n) => backoff.bound(n)), [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5, 5]);
  assert.equal(backoff.bound(5000), 5);
  assert.equal(backoff.maxAttempts, 12);
});

test("full jitter: the delay spans [0, bound)", () => {
  assert.equal(new Backoff({ random: () => 0 }).delay(3), 0);
  assert.ok(Math.abs(new Backoff({ random: () => 0.999999 }).delay(3) - 0.8) < 1e-5);
  const backoff = new Backoff();
  const delays = Array.from({ length: 2000 }, () => backoff.delay(2));
  assert.ok(delays.every((d) => d >= 0 && d < 0.4));
  // Spread over the whole range, not clustered at the bound.
  assert.ok(delays.some((d) => d < 0.1) && delays.some((d) => d > 0.3));
});

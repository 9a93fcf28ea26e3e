/**
 * A resume record in sessionStorage that something else wrote or changed (another script
 * of the origin, an older SDK, a user in the developer tools): loading it must give either
 * nothing (start afresh) or a record of the right shape, never one that throws later in
 * `open()` or sends garbage to the server as tool results.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { type StorageLike, WebResumeStore } from "../src/resume_store.js";
import { ClientSession } from "../src/client_session.js";

class FakeStorage implements StorageLike {
  readonly items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, String(value));
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
}

const base = { sessionId: "sess_a", resumeToken: "wrt_b", lastSeq: 3 };

const tampered: Array<[string, Record<string, unknown>]> = [
  ["openResponses of numbers", { ...base, openResponses: [5, 6] }],
  ["openResponses of nulls", { ...base, openResponses: [null] }],
  ["openResponses of wrong pairs", { ...base, openResponses: [[1, "x"]] }],
  ["toolResults a string", { ...base, toolResults: "abc" }],
  ["toolResults an array", { ...base, toolResults: [1, 2] }],
  ["toolResults of non-messages", { ...base, toolResults: { call_1: "rm -rf" } }],
  ["startedCalls of objects", { ...base, startedCalls: [{}, 7] }],
  ["endedResponses of numbers", { ...base, endedResponses: [1, null] }],
  ["endedResponses a string", { ...base, endedResponses: "resp_1" }],
  ["lastSeq negative", { ...base, lastSeq: -5 }],
  ["lastSeq fractional", { ...base, lastSeq: 2.5 }],
  ["lastSeq huge", { ...base, lastSeq: 1e308 }],
];

for (const [what, record] of tampered) {
  test(`a tampered resume record (${what}) loads as nothing or as a well-formed record`, () => {
    const storage = new FakeStorage();
    storage.setItem("wsserver.session", JSON.stringify(record));
    const loaded = new WebResumeStore(storage).load();
    if (loaded === undefined) return;
    assert.ok(Number.isSafeInteger(loaded.lastSeq) && loaded.lastSeq >= 0, `lastSeq ${loaded.lastSeq}`);
    for (const pair of loaded.openResponses) {
      assert.ok(Array.isArray(pair) && typeof pair[0] === "string" && Number.isSafeInteger(pair[1]), JSON.stringify(pair));
    }
    assert.ok(typeof loaded.toolResults === "object" && loaded.toolResults !== null && !Array.isArray(loaded.toolResults));
    for (const message of Object.values(loaded.toolResults)) {
      assert.ok(typeof message === "object" && message !== null && (message as { type?: unknown }).type === "tool.result", JSON.stringify(message));
    }
    for (const id of loaded.startedCalls) assert.equal(typeof id, "string");
    for (const id of loaded.endedResponses) assert.equal(typeof id, "string");
    // What open() does with it must not throw.
    new ClientSession().restore(loaded);
  });
}

/** A Web Storage that is full: every write throws, as sessionStorage does over its quota. */
class FullStorage extends FakeStorage {
  override setItem(): void {
    throw new Error("QuotaExceededError: the quota has been exceeded");
  }
}

test("a full storage never makes save throw (acks, tool calls and tool results go on), and no stale record is left", () => {
  const storage = new FullStorage();
  storage.items.set("wsserver.session", JSON.stringify({ ...base, lastSeq: 1 })); // an older save
  const store = new WebResumeStore(storage);
  assert.doesNotThrow(() => store.save({ ...base, lastSeq: 9, openResponses: [], endedResponses: [], toolResults: {}, startedCalls: ["call_1"] }));
  // Resuming from the older record would run call_1 again and replay from seq 1: start afresh instead.
  assert.equal(store.load(), undefined);
});

test("a resume record with a huge list of started calls does not make open() throw", async () => {
  const storage = new FakeStorage();
  const startedCalls = Array.from({ length: 300_000 }, (_, i) => `call_${i}`);
  storage.setItem("wsserver.session", JSON.stringify({ ...base, startedCalls }));
  const { SessionClient } = await import("../src/client.js");
  const client = new SessionClient({
    url: "ws://127.0.0.1:9/",
    resumeStore: new WebResumeStore(storage),
    socketFactory: () => {
      throw new Error("no server in this test");
    },
    reconnect: false,
    openTimeoutMs: 100,
  });
  // It may fail to connect (there is no server); it must not fail on the stored record.
  const error = await client.open().then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(!(error instanceof RangeError), String(error));
});

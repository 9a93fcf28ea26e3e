/** Resume state kept in memory or in a Web Storage (sessionStorage in a page). */
import assert from "node:assert/strict";
import { test } from "node:test";

import { MemoryResumeStore, type ResumeState, type StorageLike, WebResumeStore } from "../src/resume_store.js";

/** A Map behind the Web Storage interface, as sessionStorage is to a page. */
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

const state: ResumeState = {
  sessionId: "sess_a",
  resumeToken: "wrt_b",
  lastSeq: 41,
  openResponses: [["resp_2", 30]],
  endedResponses: ["resp_1"],
  toolResults: { call_1: { type: "tool.result", call_id: "call_1", output: { ok: true }, id: "call_1" } },
  startedCalls: ["call_1"],
};

test("memory store keeps what was saved until cleared", () => {
  const store = new MemoryResumeStore();
  assert.equal(store.load(), undefined);
  store.save(state);
  assert.deepEqual(store.load(), state);
  store.clear();
  assert.equal(store.load(), undefined);
});

test("a web store survives its object: a new one on the same storage reads the state (a reload)", () => {
  const storage = new FakeStorage();
  new WebResumeStore(storage).save(state);
  assert.deepEqual(new WebResumeStore(storage).load(), state);
  new WebResumeStore(storage).clear();
  assert.equal(new WebResumeStore(storage).load(), undefined);
});

test("keys keep sessions apart; a foreign or broken value reads as nothing", () => {
  const storage = new FakeStorage();
  new WebResumeStore(storage, "a").save(state);
  assert.equal(new WebResumeStore(storage, "b").load(), undefined);
  storage.setItem("wsserver.session", "{not json");
  assert.equal(new WebResumeStore(storage).load(), undefined);
  storage.setItem("wsserver.session", JSON.stringify({ sessionId: 1 }));
  assert.equal(new WebResumeStore(storage).load(), undefined);
  // An older, smaller record: the lists default to empty.
  storage.setItem("wsserver.session", JSON.stringify({ sessionId: "s", resumeToken: "t", lastSeq: 3 }));
  assert.deepEqual(new WebResumeStore(storage).load(), { sessionId: "s", resumeToken: "t", lastSeq: 3, openResponses: [], endedResponses: [], toolResults: {}, startedCalls: [] });
});

test("a longer list of ended responses than a session keeps is cut to its newest", () => {
  const storage = new FakeStorage();
  const endedResponses = Array.from({ length: 1000 }, (_, i) => `resp_${i}`);
  storage.setItem("wsserver.session", JSON.stringify({ ...state, endedResponses }));
  const loaded = new WebResumeStore(storage).load();
  assert.deepEqual(loaded?.endedResponses, endedResponses.slice(-64));
});

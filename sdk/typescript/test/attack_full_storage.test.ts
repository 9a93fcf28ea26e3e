/**
 * A page whose sessionStorage is full (its quota is the origin's: the page's own data can
 * fill it): the client must go on acking events and running tool calls, not throw out of
 * its frame handler at every save of the resume record.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { Backoff } from "../src/backoff.js";
import { SessionClient } from "../src/client.js";
import { type StorageLike, WebResumeStore } from "../src/resume_store.js";
import type { SocketLike } from "../src/transport.js";
import { eventually } from "./worker.js";

type Listener = (event: never) => void;

/** A socket whose server side answers session.start with a ready and one tool call. */
class ScriptedSocket implements SocketLike {
  binaryType = "blob";
  readyState = 0;
  protocol = "wsserver.v1.json";
  readonly sent: Array<Record<string, unknown>> = [];
  private readonly listeners = new Map<string, Listener[]>();

  constructor() {
    setTimeout(() => {
      this.readyState = 1;
      this.fire("open", {});
    }, 1);
  }

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  send(data: string | Uint8Array): void {
    if (typeof data !== "string") return;
    const message = JSON.parse(data) as Record<string, unknown>;
    this.sent.push(message);
    if (message["type"] !== "session.start") return;
    this.push({ type: "session.ready", session_id: "sess_x", resume_token: "wrt_y", last_seq: 0, heartbeat_interval_ms: 15000 });
    this.push({ type: "response.created", seq: 1, response_id: "resp_1" });
    this.push({ type: "response.tool_call", seq: 2, response_id: "resp_1", call_id: "call_1", name: "get_time", arguments: {} });
  }

  close(code = 1005): void {
    this.readyState = 3;
    setTimeout(() => this.fire("close", { code, reason: "" }), 1);
  }

  private push(message: Record<string, unknown>): void {
    setTimeout(() => this.fire("message", { data: JSON.stringify(message) }), 1);
  }

  private fire(type: string, event: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) (listener as (e: unknown) => void)(event);
  }
}

class FullStorage implements StorageLike {
  getItem(): string | null {
    return null;
  }
  setItem(): void {
    throw new Error("QuotaExceededError: the quota has been exceeded");
  }
  removeItem(): void {}
}

test("with sessionStorage full the tool call still runs and its result is sent", async () => {
  const socket = new ScriptedSocket();
  const client = new SessionClient({
    url: "ws://fake/",
    socketFactory: () => socket,
    backoff: new Backoff({ base: 0.001 }),
    resumeStore: new WebResumeStore(new FullStorage()),
    tools: [{ spec: { name: "get_time", parameters: { type: "object", properties: {} } }, handler: async () => ({ now: "noon" }) }],
  });
  await client.open();
  await eventually(() => socket.sent.some((m) => m["type"] === "tool.result"), 3_000, "the tool result");
  await client.close();
  assert.ok(socket.sent.some((m) => m["type"] === "tool.result" && m["call_id"] === "call_1"));
});

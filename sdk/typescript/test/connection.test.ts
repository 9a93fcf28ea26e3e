/**
 * The reconnecting connection against scripted in-memory sockets: what a real server
 * never does (a seq gap) or seldom does (refusals), and the browser's socket, which
 * cannot be cut without a close frame.
 */
import assert from "node:assert/strict";
import { test } from "node:test";

import { Backoff } from "../src/backoff.js";
import { SessionClient } from "../src/client.js";
import { SessionClosed } from "../src/errors.js";
import { watchPageLifecycle } from "../src/lifecycle.js";
import type { ServerEvent } from "../src/events.js";
import type { SocketFactory, SocketLike } from "../src/transport.js";
import { eventually } from "./worker.js";

type Listener = (event: never) => void;

/** A socket whose server side is a script: `serve` gets each client message. */
class FakeSocket implements SocketLike {
  binaryType = "blob";
  readyState = 0;
  protocol = "wsserver.v1.json";
  readonly sent: unknown[] = [];
  closedWith: number | undefined;
  private readonly listeners = new Map<string, Listener[]>();

  constructor(
    readonly url: string,
    readonly protocols: string[],
    private readonly serve: (socket: FakeSocket, message: Record<string, unknown>) => void,
    readonly canTerminate: boolean,
  ) {
    if (canTerminate) this.terminate = () => this.fire("close", { code: 1006, reason: "" });
    setTimeout(() => {
      this.readyState = 1;
      this.fire("open", {});
    }, 1);
  }

  terminate?: () => void;

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  send(data: string | Uint8Array): void {
    this.sent.push(data);
    if (typeof data === "string") this.serve(this, JSON.parse(data) as Record<string, unknown>);
  }

  close(code = 1005): void {
    this.closedWith = code;
    this.readyState = 3;
    setTimeout(() => this.fire("close", { code, reason: "" }), 1);
  }

  /** The server sends a message. */
  push(message: Record<string, unknown>): void {
    setTimeout(() => this.fire("message", { data: JSON.stringify(message) }), 1);
  }

  /** The server closes the connection. */
  serverClose(code: number): void {
    this.readyState = 3;
    setTimeout(() => this.fire("close", { code, reason: "" }), 1);
  }

  private fire(type: string, event: unknown): void {
    for (const listener of this.listeners.get(type) ?? []) (listener as (e: unknown) => void)(event);
  }
}

const READY = { type: "session.ready", session_id: "sess_x", resume_token: "wrt_y", last_seq: 0, heartbeat_interval_ms: 15000 };
const delta = (seq: number): Record<string, unknown> => ({ type: "response.text.delta", seq, response_id: "resp_1", delta: `d${seq}` });

function harness(serve: (socket: FakeSocket, message: Record<string, unknown>, index: number) => void, canTerminate = true, backoff = new Backoff({ base: 0.001 })) {
  const sockets: FakeSocket[] = [];
  const factory: SocketFactory = (url, protocols) => {
    const index = sockets.length;
    const socket = new FakeSocket(url, protocols, (s, m) => serve(s, m, index), canTerminate);
    sockets.push(socket);
    return socket;
  };
  const client = new SessionClient({ url: "ws://fake/", socketFactory: factory, backoff, clientToken: "wct_abc.def" });
  const seen: ServerEvent[] = [];
  client.on("*", (e) => seen.push(e));
  return { client, sockets, seen };
}

test("a seq gap drops the connection and resumes from the last seq: each event once, in order", async () => {
  const { client, sockets, seen } = harness((socket, message, index) => {
    if (index === 0 && message["type"] === "session.start") {
      socket.push(READY);
      socket.push(delta(1));
      socket.push(delta(3)); // a gap: never papered over
    } else if (index === 1 && message["type"] === "session.resume") {
      assert.equal(message["last_seq"], 1);
      socket.push({ ...READY, resumed: true, resume_token: undefined, last_seq: 3 });
      for (const seq of [1, 2, 3]) socket.push(delta(seq)); // an overlap too
    }
  });
  await client.open();
  await eventually(() => client.lastSeq === 3, 5_000, "seq 3");
  assert.deepEqual(seen.flatMap((e) => (e.type === "response.text.delta" ? [e.seq] : [])), [1, 2, 3]);
  assert.equal(client.connection.badFrames, 1);
  assert.equal(client.state.duplicates, 1);
  assert.ok(sockets[1]?.url.endsWith("?session_id=sess_x"), "a resume names its session in the URL");
  assert.deepEqual(sockets[0]?.protocols, ["wsserver.v1.json", "wsserver.token.wct_abc.def"]);
  client.abandon();
});

test("a refused resume ends the session: the error, then response.truncated, then SessionClosed", async () => {
  const { client, seen } = harness((socket, message, index) => {
    if (index === 0) {
      socket.push(READY);
      socket.push({ type: "response.created", seq: 1, response_id: "resp_1" });
      setTimeout(() => socket.serverClose(1011), 20);
    } else if (message["type"] === "session.resume") {
      socket.push({ type: "error", code: "replay_unavailable", message: "events 2..9 are no longer buffered", snapshot: { conversation: [] } });
    }
  });
  await client.open();
  const pulled: string[] = [];
  for await (const event of client.events()) pulled.push(event.type); // ends with the session
  assert.deepEqual(pulled, ["session.ready", "response.created", "error", "response.truncated"]);
  await assert.rejects(client.nextEvent(), SessionClosed);
  await assert.rejects(client.send({ type: "ping" }), SessionClosed);
  const types = seen.map((e) => e.type);
  assert.deepEqual(types.slice(-2), ["error", "response.truncated"]);
  assert.equal(seen.at(-1)?.["reason"], "resume_failed");
});

test("a session.start refused for now (store down) is retried; a terminal close before ready is not", async () => {
  const { client, sockets } = harness((socket, message, index) => {
    if (message["type"] !== "session.start") return;
    if (index === 0) socket.push({ type: "error", code: "store_unavailable", message: "retry" });
    else socket.push(READY);
  });
  const ready = await client.open();
  assert.equal(ready.session_id, "sess_x");
  assert.equal(sockets[0]?.closedWith, 1000, "the refused connection carries no session: 1000 ends nothing");
  client.abandon();

  const flood = harness((socket) => socket.serverClose(4005));
  await assert.rejects(flood.client.open(), SessionClosed);
  assert.equal(flood.sockets.length, 1);
});

test("a browser socket given up by the watchdog is closed only after the next session.ready", async () => {
  const quiet = { ...READY, heartbeat_interval_ms: 20 }; // silent for 1.04 s: half-open
  const { client, sockets } = harness((socket, message, index) => {
    if (index === 0) socket.push(quiet);
    else if (message["type"] === "session.resume") setTimeout(() => socket.push({ ...quiet, resumed: true }), 50);
  }, false);
  await client.open();
  await eventually(() => sockets.length === 2, 10_000, "a second connection");
  // No close frame yet: any code but 1000 would cancel the running answer on the server.
  assert.equal(sockets[0]?.closedWith, undefined);
  await eventually(() => sockets[0]?.closedWith !== undefined, 10_000, "the old socket closed");
  assert.equal(sockets[0]?.closedWith, 4000);
  assert.equal(client.connection.silentDrops, 1);
  client.abandon();
});

test("the network coming back (online) reconnects at once instead of after the backoff", async () => {
  // A backoff of about a minute: only wake() can make the resume come in time.
  const { client, sockets } = harness(
    (socket, message) => {
      if (message["type"] === "session.start" || message["type"] === "session.resume") socket.push(READY);
    },
    true,
    new Backoff({ base: 60, cap: 60, random: () => 0.99 }),
  );
  const page = { window: new EventTarget(), document: Object.assign(new EventTarget(), { visibilityState: "visible" }) };
  const unwatch = watchPageLifecycle(client, page);
  await client.open();
  client.drop();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(sockets.length, 1, "waiting out the backoff");
  page.window.dispatchEvent(new Event("online"));
  await eventually(() => client.connected && sockets.length === 2, 5_000, "resumed after online");
  page.document.dispatchEvent(new Event("visibilitychange")); // a live connection: only checked
  assert.equal(sockets.length, 2);
  unwatch();
  client.abandon();
});

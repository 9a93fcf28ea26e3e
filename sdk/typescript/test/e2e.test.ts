/**
 * End to end against a real worker subprocess (simulated engine), through a loopback
 * relay where a connection must be cut or frozen. Every client authenticates with a
 * client token minted per connection, as a browser's backend would mint it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { AuthenticationError, ClientError, MemoryResumeStore, PartialJson, SessionClient, SessionClosed, type ServerEvent, type SessionClientOptions, type SocketFactory, type SocketLike, type ToolCallDelta } from "../src/index.js";
import { nodeSocketFactory } from "../src/node.js";
import { eventually, Relay, Worker } from "./worker.js";

const worker = new Worker();
let socketFactory: SocketFactory;
/** Node's global WebSocket (node --experimental-websocket): the browser's interface and limits. */
const browserSocket = typeof (globalThis as { WebSocket?: unknown }).WebSocket === "function";

before(async () => {
  socketFactory = await nodeSocketFactory();
  // 100 tokens/s and 120-token answers: an answer lasts about a second, long enough to cut.
  await worker.start("--decode-rate", "100", "--answer-tokens", "120", "--heartbeat-interval", "0.5");
});
after(() => worker.stop());

function client(options: Partial<SessionClientOptions> = {}): SessionClient {
  return new SessionClient({ url: worker.url, socketFactory, clientToken: () => worker.mintToken(), ...options });
}

/** Every event a client hands over, recorded from the moment it is made. */
function record(c: SessionClient): ServerEvent[] {
  const seen: ServerEvent[] = [];
  c.on("*", (event) => seen.push(event));
  return seen;
}

const texts = (events: ServerEvent[]): string => events.filter((e) => e.type === "response.text.delta").map((e) => String(e["delta"])).join("");
const seqs = (events: ServerEvent[]): number[] => events.flatMap((e) => (typeof e.seq === "number" ? [e.seq] : []));
const consecutive = (list: number[]): boolean => list.every((seq, i) => seq === (list[0] as number) + i);

/** The whole answer to `prompt`, from a session nobody disturbs (the engine is deterministic). */
async function reference(prompt: string): Promise<string> {
  const c = client();
  await c.open();
  const result = await c.ask(prompt);
  await c.close();
  assert.equal(result.status, "completed");
  return result.text;
}

describe("against a worker", { timeout: 60_000 }, () => {
  test("a text answer streams and ends with response.done", { timeout: 30_000 }, async () => {
    const c = client({ instructions: "be brief" });
    const seen = record(c);
    const ready = await c.open();
    assert.equal(ready.resumed, false);
    assert.match(ready.session_id, /^sess_/);
    const result = await c.ask("what is a websocket?");
    assert.equal(result.status, "completed");
    assert.ok(result.text.length > 0);
    assert.equal(texts(seen), result.text);
    const done = seen.filter((e) => e.type === "response.done");
    assert.equal(done.length, 1);
    assert.equal(result.usage?.output_tokens_generated, 120);
    assert.deepEqual(seqs(seen), Array.from({ length: seqs(seen).length }, (_, i) => i + 1));
    await c.close();
  });

  test("interrupt stops the answer: response.done interrupted", { timeout: 30_000 }, async () => {
    const c = client();
    const seen = record(c);
    await c.open();
    await c.createResponse("tell me a long story");
    await eventually(() => seen.filter((e) => e.type === "response.text.delta").length >= 5, 20_000, "five deltas");
    await c.interrupt({ renderedChars: 3 });
    const result = await c.collectResponse();
    assert.equal(result.status, "interrupted");
    assert.equal(result.reason, "client");
    assert.ok((result.usage?.output_tokens_generated ?? 0) < 120);
    await c.close();
  });

  test("a tool call is answered by its handler, once; provisional arguments match the parser's", { timeout: 30_000 }, async () => {
    let runs = 0;
    const c = client({
      tools: [
        {
          spec: { name: "get_weather", description: "weather in a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
          handler: (args) => {
            runs += 1;
            return { temp_c: 18, city: (args as { city: string }).city };
          },
        },
      ],
    });
    const seen = record(c);
    await c.open();
    const result = await c.ask("what is the weather in Paris?");
    assert.equal(result.status, "completed");
    assert.equal(runs, 1);
    assert.equal(result.toolCalls.length, 1);
    assert.deepEqual(result.toolCalls[0]?.arguments, { city: "Paris" });
    assert.match(result.text, /temp_c/);
    const accepted = seen.filter((e) => e.type === "tool.result.accepted");
    assert.deepEqual(accepted.map((e) => e["duplicate"]), [false]);
    // The server's provisional values and this SDK's parser agree at every fragment.
    const parser = new PartialJson();
    const deltas = seen.filter((e): e is ToolCallDelta => e.type === "response.tool_call.delta");
    assert.ok(deltas.length > 1);
    for (const delta of deltas) {
      parser.feed(delta.delta);
      assert.deepEqual(parser.value ?? null, delta.arguments);
    }
    assert.equal(c.toolbox.unacknowledged.size, 0);
    await c.close();
  });

  test("a connection cut mid-answer resumes with the text whole and no duplicate", { timeout: 30_000 }, async () => {
    const prompt = "tell me about rivers";
    const whole = await reference(prompt);
    const relay = await new Relay().start(worker.url);
    const c = client({ url: relay.url });
    const seen = record(c);
    await c.open();
    await c.createResponse(prompt);
    await eventually(() => seen.filter((e) => e.type === "response.text.delta").length >= 10, 20_000, "ten deltas");
    relay.cut();
    const result = await c.collectResponse();
    assert.equal(result.status, "completed");
    assert.equal(result.text, whole);
    assert.equal(texts(seen), whole);
    assert.ok(consecutive(seqs(seen)) && seqs(seen)[0] === 1, "every seq once, in order");
    assert.ok(c.connection.reconnects >= 1);
    assert.equal(seen.filter((e) => e.type === "session.ready" && e["resumed"] === true).length >= 1, true);
    await c.close();
    await relay.stop();
  });

  test("a frozen (half-open) connection is found by the heartbeat watchdog and resumed", { timeout: 30_000 }, async () => {
    const prompt = "tell me about mountains";
    const whole = await reference(prompt);
    const relay = await new Relay().start(worker.url);
    const c = client({ url: relay.url });
    const seen = record(c);
    await c.open();
    await c.createResponse(prompt);
    await eventually(() => seen.filter((e) => e.type === "response.text.delta").length >= 10, 20_000, "ten deltas");
    relay.freeze();
    const result = await c.collectResponse();
    assert.equal(result.text, whole);
    assert.equal(result.status, "completed");
    assert.ok(c.connection.silentDrops >= 1);
    assert.ok(consecutive(seqs(seen)));
    await c.close();
    await relay.stop();
  });

  test("a new client object resumes from the stored state (the page-reload case)", { timeout: 30_000 }, async () => {
    const prompt = "tell me about forests";
    const whole = await reference(prompt);
    const store = new MemoryResumeStore();
    const first = client({ resumeStore: store });
    const before = record(first);
    await first.open();
    await first.createResponse(prompt);
    await eventually(() => before.filter((e) => e.type === "response.text.delta").length >= 10, 20_000, "ten deltas");
    first.abandon(); // the old page goes away; its state stays in the store
    const stored = store.load();
    assert.ok(stored !== undefined && stored.lastSeq === first.lastSeq);
    const second = client({ resumeStore: store });
    const afterwards = record(second);
    const ready = await second.open();
    assert.equal(ready.resumed, true);
    assert.equal(ready.session_id, first.sessionId);
    const result = await second.collectResponse();
    assert.equal(result.status, "completed");
    assert.equal(texts(before) + texts(afterwards), whole);
    const all = [...seqs(before), ...seqs(afterwards)];
    assert.ok(consecutive(all) && all[0] === 1, "no seq twice, none missing");
    await second.close();
    assert.equal(store.load(), undefined, "an ended session leaves nothing to resume");
  });

  test("a tool result lost with its connection is sent again after the resume, the handler run once", { timeout: 30_000 }, async () => {
    const relay = await new Relay().start(worker.url);
    let runs = 0;
    const c = client({
      url: relay.url,
      tools: [
        {
          spec: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
          handler: () => {
            runs += 1;
            // The result goes out on a link that has just gone dead: the server never
            // reads it; the watchdog finds the silence, and the resume must send it again.
            relay.freeze();
            return { temp_c: 7 };
          },
        },
      ],
    });
    await c.open();
    const result = await c.ask("weather in Oslo please");
    assert.equal(result.status, "completed");
    assert.match(result.text, /"temp_c": 7/);
    assert.equal(runs, 1);
    assert.ok(c.connection.silentDrops >= 1);
    await eventually(() => c.toolbox.unacknowledged.size === 0, 20_000, "the result acknowledged");
    await c.close();
    await relay.stop();
  });

  test("a voice turn: PCM16 frames in, audio frames out, playback reported", { timeout: 30_000 }, async () => {
    const c = client({ audio: { sample_rate: 16000, turn_detection: { type: "manual" } } });
    const seen = record(c);
    const ready = await c.open();
    assert.equal(ready.audio_in_seq, -1);
    // 300 ms of a quiet tone; `last` commits the turn in manual mode.
    const samples = new Int16Array(4800).map((_, i) => Math.round(800 * Math.sin(i / 8)));
    c.sendAudio(samples, true);
    const result = await c.collectResponse();
    assert.equal(result.status, "completed");
    assert.ok(result.audio.byteLength > 0 && result.audio.byteLength % 2 === 0);
    assert.ok(seen.some((e) => e.type === "input_audio.committed"));
    assert.equal(c.microphone.nextSeq, 3);
    await c.reportPlayback(result.responseId, 120);
    await c.ping("p1");
    await eventually(() => seen.some((e) => e.type === "pong"), 20_000, "pong");
    assert.ok(!seen.some((e) => e.type === "error"), JSON.stringify(seen.filter((e) => e.type === "error")));
    await c.close();
  });

  // What a browser does when its page unloads or reloads: it closes the socket with 1001,
  // which the server takes as a drop: the answer runs on for the reloaded page.
  test("a page unload (close 1001) mid-answer leaves the answer running for the reloaded page", { timeout: 30_000 }, async () => {
    if (browserSocket) return; // a page's script may not send 1001: only the browser does, on unload
    const store = new MemoryResumeStore();
    const sockets: SocketLike[] = [];
    const recording: SocketFactory = (url, protocols) => {
      const socket = socketFactory(url, protocols);
      sockets.push(socket);
      return socket;
    };
    const first = client({ resumeStore: store, socketFactory: recording });
    const seen = record(first);
    await first.open();
    await first.createResponse("tell me about lakes");
    await eventually(() => seen.filter((e) => e.type === "response.text.delta").length >= 5, 20_000, "five deltas");
    sockets.at(-1)?.close(1001, "page unload"); // what the browser sends by itself
    first.abandon();
    const reloaded = client({ resumeStore: store });
    await reloaded.open();
    const result = await reloaded.collectResponse();
    assert.equal(result.status, "completed", `ended ${result.status} (${result.reason})`);
    await reloaded.close();
  });

  test("close() ends the session: its resume state is refused", { timeout: 30_000 }, async () => {
    const c = client();
    await c.open();
    const point = c.state.resumePoint();
    await c.close();
    const store = new MemoryResumeStore();
    assert.ok(point !== undefined);
    store.save({ ...point, openResponses: [], endedResponses: [], toolResults: {}, startedCalls: [] });
    const again = client({ resumeStore: store });
    const seen = record(again);
    await assert.rejects(again.open(), SessionClosed);
    assert.ok(seen.some((e) => e.type === "error" && e["code"] === "unknown_session"));
  });

  test("without a client token the handshake is refused, and never retried where the status shows", { timeout: 30_000 }, async () => {
    const c = new SessionClient({ url: worker.url, socketFactory, openTimeoutMs: 2_000 });
    if (browserSocket) {
      // A browser's WebSocket hides the 401: it looks like a network failure, retried.
      await assert.rejects(c.open(), ClientError);
      assert.ok(c.connection.reconnects >= 1);
    } else {
      await assert.rejects(c.open(), AuthenticationError);
      assert.equal(c.connection.reconnects, 0);
    }
  });
});

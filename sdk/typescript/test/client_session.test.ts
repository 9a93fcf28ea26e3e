/** The client state machine: dedup by seq, gaps, truncation, resume decisions, acks. */
import assert from "node:assert/strict";
import { test } from "node:test";

import { ClientSession, SequenceGap } from "../src/client_session.js";
import type { ServerMessageBase } from "../src/events.js";

const ready = (fields: Record<string, unknown> = {}): ServerMessageBase => ({
  type: "session.ready", session_id: "sess_a", resumed: false, last_seq: 0, heartbeat_interval_ms: 15000, resume_token: "wrt_x", ...fields,
});
const ev = (seq: number, type = "response.text.delta", fields: Record<string, unknown> = {}): ServerMessageBase => ({
  type, seq, response_id: "resp_1", delta: String(seq), ...fields,
});

function opened(): ClientSession {
  const session = new ClientSession(4);
  session.startMessage();
  session.receive(ready());
  return session;
}

test("each event once, in order: duplicates of a replay overlap are dropped", () => {
  const session = opened();
  assert.equal(session.state, "open");
  assert.equal(session.receive(ev(1)).length, 1);
  assert.equal(session.receive(ev(2)).length, 1);
  assert.deepEqual(session.receive(ev(1)), []);
  assert.deepEqual(session.receive(ev(2)), []);
  assert.equal(session.receive(ev(3)).length, 1);
  assert.equal(session.lastSeq, 3);
  assert.equal(session.duplicates, 2);
});

test("a gap is never papered over", () => {
  const session = opened();
  session.receive(ev(1));
  assert.throws(() => session.receive(ev(3)), SequenceGap);
  assert.equal(session.lastSeq, 1);
});

test("messages without seq pass untouched", () => {
  const session = opened();
  const heartbeat = { type: "heartbeat", server_time_ms: 1, last_seq: 9 };
  assert.deepEqual(session.receive(heartbeat), [heartbeat]);
  assert.deepEqual(session.receive(heartbeat), [heartbeat]);
});

test("resume carries the last seq; a fatal refusal truncates open responses", () => {
  const session = opened();
  session.receive(ev(1, "response.created"));
  session.receive(ev(2));
  assert.equal(session.connectionLost(1006), "resume");
  assert.equal(session.state, "disconnected");
  assert.deepEqual(session.resumeMessage(), { type: "session.resume", session_id: "sess_a", resume_token: "wrt_x", last_seq: 2 });
  // A transient refusal: still resuming.
  const transient = { type: "error", code: "store_unavailable", message: "" };
  assert.deepEqual(session.receive(transient), [transient]);
  assert.equal(session.state, "resuming");
  const refused = session.receive({ type: "error", code: "replay_unavailable", message: "", snapshot: {} });
  assert.equal(session.state, "closed");
  assert.deepEqual(refused[1], { type: "response.truncated", response_id: "resp_1", reason: "resume_failed" });
});

test("a resumed ready keeps the token and last seq; lost_after_seq ends later responses", () => {
  const session = opened();
  session.receive(ev(1, "response.created", { response_id: "resp_1" }));
  session.receive(ev(2, "response.done", { response_id: "resp_1" }));
  session.receive(ev(3, "response.created", { response_id: "resp_2" }));
  session.connectionLost(undefined);
  session.resumeMessage();
  const out = session.receive(ready({ resumed: true, last_seq: 3, resume_token: undefined, lost_after_seq: 2 }));
  assert.deepEqual(out[1], { type: "response.truncated", response_id: "resp_2", reason: "worker_lost" });
  assert.equal(session.resumeToken, "wrt_x");
  assert.equal(session.lastSeq, 3);
});

test("a second end of a response after a takeover is dropped; one never seen passes", () => {
  // The old worker died after the client saw resp_1 end, before storing it: the new
  // owner ends resp_1 failed after the resume. The application sees it end once.
  const session = opened();
  session.receive(ev(1, "response.created"));
  session.receive(ev(2, "response.done", { status: "completed" }));
  session.connectionLost(undefined);
  session.resumeMessage();
  session.receive(ready({ resumed: true, last_seq: 2, resume_token: undefined, lost_after_seq: 1 }));
  assert.deepEqual(session.receive(ev(3, "response.done", { status: "failed" })), []);
  assert.equal(session.duplicateEnds, 1);
  assert.equal(session.lastSeq, 3);
  const unseen = ev(4, "response.done", { response_id: "resp_0", status: "failed" });
  assert.deepEqual(session.receive(unseen), [unseen]);
});

test("a new object restored from the resume point drops a takeover's second end too (a reload)", () => {
  // The page saw resp_1 end and reloaded; the worker had died before storing that end,
  // so the one that takes the session over ends resp_1 failed after the new page resumes.
  const old = opened();
  old.receive(ev(1, "response.created"));
  old.receive(ev(2, "response.done", { status: "completed" }));
  const point = old.resumePoint();
  assert.ok(point !== undefined);
  assert.deepEqual(point.endedResponses, ["resp_1"]);
  const reloaded = new ClientSession(4);
  reloaded.restore(JSON.parse(JSON.stringify(point)));
  reloaded.resumeMessage();
  reloaded.receive(ready({ resumed: true, last_seq: 2, resume_token: undefined, lost_after_seq: 1 }));
  assert.deepEqual(reloaded.receive(ev(3, "response.done", { status: "failed" })), []);
  assert.equal(reloaded.duplicateEnds, 1);
  const unseen = ev(4, "response.done", { response_id: "resp_0", status: "failed" });
  assert.deepEqual(reloaded.receive(unseen), [unseen]);
});

test("a response ended as truncated does not end again; 64 ends are remembered", () => {
  const session = opened();
  session.receive(ev(1, "response.created"));
  session.giveUp("reconnect_exhausted");
  assert.deepEqual(session.receive(ev(2, "response.done", { status: "failed" })), []);
  for (let n = 0; n < 100; n += 1) {
    session.receive(ev(3 + 2 * n, "response.created", { response_id: `r${n}` }));
    session.receive(ev(4 + 2 * n, "response.done", { response_id: `r${n}` }));
  }
  assert.equal(session.ended.length, 64);
  assert.equal(session.ended[63], "r99");
});

test("close codes decide: terminal, resume, and nothing to resume before ready", () => {
  const session = opened();
  assert.equal(session.connectionLost(4005), "terminal");
  const fresh = new ClientSession();
  fresh.startMessage();
  assert.equal(fresh.connectionLost(1006), "terminal");
  const moved = opened();
  assert.equal(moved.connectionLost(4003), "resume");
  assert.equal(moved.connectionLost(4999), "resume"); // an unknown code: the transport failed
  assert.equal(opened().connectionLost(4002), "terminal");
});

test("giving up truncates every open response", () => {
  const session = opened();
  session.receive(ev(1, "response.created"));
  assert.deepEqual(session.giveUp("reconnect_exhausted"), [{ type: "response.truncated", response_id: "resp_1", reason: "reconnect_exhausted" }]);
  assert.equal(session.state, "closed");
});

test("acks every ackEvery events, never below what was acked", () => {
  const session = opened();
  for (let seq = 1; seq <= 3; seq++) session.receive(ev(seq));
  assert.equal(session.ackMessage(), undefined);
  session.receive(ev(4));
  assert.deepEqual(session.ackMessage(), { type: "ack", seq: 4 });
  assert.equal(session.ackMessage(true), undefined);
  session.receive(ev(5));
  assert.deepEqual(session.ackMessage(true), { type: "ack", seq: 5 });
});

test("a restored resume point resumes from where the other object stopped", () => {
  const session = new ClientSession();
  session.restore({ sessionId: "sess_b", resumeToken: "wrt_y", lastSeq: 41 });
  assert.deepEqual(session.resumeMessage(), { type: "session.resume", session_id: "sess_b", resume_token: "wrt_y", last_seq: 41 });
  assert.deepEqual(session.receive(ev(41)), []);
  assert.equal(session.receive(ev(42)).length, 1);
});

/**
 * The client side of a session as a state machine with no I/O (a port of the server
 * repository's `protocol/client_session.py`).
 *
 * It removes duplicates by `seq`, remembers the last seq seen, notices a response that
 * can no longer finish (truncated), decides from a close code whether to reconnect, and
 * builds the resume request.
 * @packageDocumentation
 */
import { closeDisposition, RESUME_FATAL } from "./codes.js";
/** Ended responses remembered, to drop a second end of one (see {@link ClientSession.ended}). */
export const ENDED_KEPT = 64;
/** The server skipped a seq: a server bug, never papered over (the SDK resumes instead). */
export class SequenceGap extends Error {
    name = "SequenceGap";
}
/** Dedup, last-seen tracking, truncation detection and resume decisions. */
export class ClientSession {
    ackEvery;
    state = "new";
    sessionId;
    resumeToken;
    /** The highest seq handed to the application. */
    lastSeq = 0;
    /** The highest seq acknowledged to the server. */
    ackedSeq = 0;
    /** Events dropped because their seq was already seen (a replay overlap). */
    duplicates = 0;
    /** Responses that got `response.created` and no `response.done` yet, in order. */
    openResponses = [];
    createdSeq = new Map();
    /**
     * The last responses the application saw end (`response.done` or truncated). A worker
     * that died after its client saw a response's `response.done`, and before storing it,
     * leaves the response running in the store: the worker that takes the session over
     * ends it `failed`. That second end is dropped (counted in {@link duplicateEnds}), so
     * the application sees each response end once.
     */
    ended = [];
    /** Second ends of a response dropped (see {@link ended}). */
    duplicateEnds = 0;
    /** @param ackEvery - send an `ack` after this many new events (default 32). */
    constructor(ackEvery = 32) {
        this.ackEvery = ackEvery;
    }
    /** Continue a session another client object started (its stored resume point). */
    restore(point) {
        this.sessionId = point.sessionId;
        this.resumeToken = point.resumeToken;
        this.lastSeq = point.lastSeq;
        // The previous object may have acked up to here; never resume from below it.
        this.ackedSeq = point.lastSeq;
        this.openResponses.length = 0;
        this.createdSeq.clear();
        for (const [id, seq] of point.openResponses ?? []) {
            this.openResponses.push(id);
            this.createdSeq.set(id, seq);
        }
        // The old object's application saw these end: a takeover's second end is dropped
        // here as it would have been there.
        this.ended.length = 0;
        this.ended.push(...(point.endedResponses ?? []).slice(-ENDED_KEPT));
        this.state = "disconnected";
    }
    /** The resume point, once the session has one. */
    resumePoint() {
        if (this.sessionId === undefined || this.resumeToken === undefined)
            return undefined;
        return {
            sessionId: this.sessionId,
            resumeToken: this.resumeToken,
            lastSeq: this.lastSeq,
            openResponses: this.openResponses.map((id) => [id, this.createdSeq.get(id) ?? 0]),
            endedResponses: [...this.ended],
        };
    }
    // -- outgoing ---------------------------------------------------------------------
    /** The `session.start` to send on a fresh connection (fields left undefined are left out). */
    startMessage(fields = {}) {
        this.state = "opening";
        const message = { type: "session.start" };
        for (const [key, value] of Object.entries(fields)) {
            if (value !== undefined && value !== null)
                message[key] = value;
        }
        return message;
    }
    /** The `session.resume` to send after reconnecting. */
    resumeMessage() {
        const point = this.resumePoint();
        if (point === undefined)
            throw new Error("no session to resume");
        this.state = "resuming";
        return {
            type: "session.resume",
            session_id: point.sessionId,
            resume_token: point.resumeToken,
            last_seq: point.lastSeq,
        };
    }
    /** An `ack` if enough events arrived since the last one (or `force`). */
    ackMessage(force = false) {
        const unacked = this.lastSeq - this.ackedSeq;
        if (unacked > 0 && (force || unacked >= this.ackEvery)) {
            this.ackedSeq = this.lastSeq;
            return { type: "ack", seq: this.lastSeq };
        }
        return undefined;
    }
    // -- incoming ---------------------------------------------------------------------
    /**
     * Feed one decoded server message; returns what the application should see (nothing
     * for a duplicate). Throws {@link SequenceGap} when a seq skips ahead.
     */
    receive(message) {
        const seq = message.seq;
        const type = message.type;
        if (type === "session.ready")
            return this.onReady(message);
        if (typeof seq !== "number" || !Number.isInteger(seq)) {
            if (type === "error" && this.state === "resuming")
                return this.onResumeError(message);
            return [message];
        }
        if (seq <= this.lastSeq) {
            this.duplicates += 1;
            return [];
        }
        if (seq !== this.lastSeq + 1) {
            throw new SequenceGap(`expected seq ${this.lastSeq + 1}, got ${seq}`);
        }
        this.lastSeq = seq;
        const responseId = message["response_id"];
        if (type === "response.created" && typeof responseId === "string") {
            this.openResponses.push(responseId);
            this.createdSeq.set(responseId, seq);
        }
        else if (type === "response.done" && typeof responseId === "string") {
            if (this.openResponses.includes(responseId)) {
                this.forget(responseId);
            }
            else if (this.ended.includes(responseId)) {
                this.duplicateEnds += 1;
                return [];
            }
        }
        return [message];
    }
    onReady(message) {
        const sessionId = message["session_id"];
        if (this.state === "resuming" && sessionId === this.sessionId) {
            this.state = "open";
            const lostAfter = message["lost_after_seq"];
            if (typeof lostAfter === "number") {
                // The old worker died before storing what came after: a response the client
                // saw start there is unknown to the new one and never ends.
                return [message, ...this.truncateCreatedAfter(lostAfter)];
            }
            return [message];
        }
        this.sessionId = typeof sessionId === "string" ? sessionId : undefined;
        const token = message["resume_token"];
        this.resumeToken = typeof token === "string" ? token : undefined;
        const lastSeq = message["last_seq"];
        this.lastSeq = typeof lastSeq === "number" ? lastSeq : 0;
        this.ackedSeq = this.lastSeq;
        this.state = "open";
        return [message];
    }
    onResumeError(message) {
        const code = message["code"];
        if (typeof code !== "string" || !RESUME_FATAL.has(code))
            return [message];
        this.state = "closed";
        return [message, ...this.truncateOpen("resume_failed")];
    }
    // -- connection loss --------------------------------------------------------------
    /** The connection closed; decide whether to reconnect and resume. */
    connectionLost(closeCode) {
        if (this.state === "closed")
            return "terminal";
        let disposition = closeDisposition(closeCode);
        // Nothing to resume: the session never opened.
        if (this.resumePoint() === undefined)
            disposition = "terminal";
        this.state = disposition === "resume" ? "disconnected" : "closed";
        return disposition;
    }
    /** Stop for good; returns a truncation event for every unfinished response. */
    giveUp(reason) {
        this.state = "closed";
        return this.truncateOpen(reason);
    }
    /** The response ended for the application. */
    forget(responseId) {
        const index = this.openResponses.indexOf(responseId);
        if (index >= 0)
            this.openResponses.splice(index, 1);
        this.createdSeq.delete(responseId);
        this.ended.push(responseId);
        if (this.ended.length > ENDED_KEPT)
            this.ended.shift();
    }
    truncateCreatedAfter(seq) {
        const lost = this.openResponses.filter((id) => (this.createdSeq.get(id) ?? 0) > seq);
        for (const id of lost)
            this.forget(id);
        return lost.map((id) => truncated(id, "worker_lost"));
    }
    truncateOpen(reason) {
        const ids = [...this.openResponses];
        for (const id of ids)
            this.forget(id);
        return ids.map((id) => truncated(id, reason));
    }
}
function truncated(responseId, reason) {
    return { type: "response.truncated", response_id: responseId, reason };
}

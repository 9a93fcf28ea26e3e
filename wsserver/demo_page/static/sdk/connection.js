/**
 * One session's connections: connect, read, watch for silence, reconnect with backoff.
 *
 * A connection opens with `session.start` (or `session.resume` once the session has an
 * id) and lives until it drops. Then the client waits a jittered backoff, tries the next
 * URL and resumes from the last seq it handed the application. It gives up, ending the
 * events with `response.truncated` for every open response, when the server's answer is
 * terminal (a close code, a refused resume, refused credentials) or the attempts run out.
 * @packageDocumentation
 */
import { ABNORMAL_CLOSE, closeDisposition, errorDisposition, isAuthClose } from "./codes.js";
import { AuthenticationError, SessionClosed } from "./errors.js";
import { endOnServer } from "./ending.js";
import { decodeFrame, offeredProtocols, sessionUrl } from "./frames.js";
import { OPEN } from "./transport.js";
const DEFAULT_HEARTBEAT_MS = 15_000;
/** The connections of one session, one at a time, and the events they bring. */
export class ReconnectingConnection {
    state;
    options;
    /** Reconnect attempts made so far. */
    reconnects = 0;
    /** Every connection's close code, in order (1006: no closing handshake). */
    closeCodes = [];
    /** Connections dropped because a frame could not be used (a seq gap, a bad frame). */
    badFrames = 0;
    /** Connections dropped because nothing arrived for two heartbeat intervals. */
    silentDrops = 0;
    /** The last `session.ready`. */
    ready;
    urlIndex = 0;
    attempt = 0;
    live;
    closing = false;
    finished;
    authRefusal;
    hooks;
    waiters = [];
    retryTimer;
    /** Sockets given up without a way to cut them: closed once the session is ready elsewhere. */
    abandoned = [];
    constructor(state, options) {
        this.state = state;
        this.options = options;
        if (options.urls.length === 0)
            throw new Error("at least one url");
    }
    /** The URL the next connection goes to. */
    get url() {
        return this.options.urls[this.urlIndex % this.options.urls.length];
    }
    /** Whether a connection carries the session now (its `session.ready` came). */
    get connected() {
        return this.live?.ready === true;
    }
    /** Start connecting. */
    start(hooks) {
        this.hooks = hooks;
        void this.connect();
    }
    /** Send one client message, waiting for a (re)connected session first. */
    async send(message) {
        for (;;) {
            if (this.finished !== undefined)
                throw this.finished;
            const live = this.live;
            if (live?.ready === true && live.socket.readyState === OPEN) {
                live.socket.send(JSON.stringify(message));
                return;
            }
            await new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
        }
    }
    /** Send a binary frame on the current connection; nothing while there is none. */
    sendFrameIfConnected(frame) {
        const live = this.live;
        if (live?.ready === true && live.socket.readyState === OPEN)
            live.socket.send(frame);
    }
    /** The network is back or the page visible: a reconnect waiting out its backoff goes now; a live connection's silence is checked now. */
    wake() {
        if (this.finished !== undefined || this.closing)
            return;
        if (this.live !== undefined)
            return this.watch(this.live);
        clearTimeout(this.retryTimer);
        void this.connect();
    }
    /** Cut the current connection as a network failure would (no close frame where possible). */
    drop() {
        if (this.live !== undefined)
            this.abandon(this.live);
    }
    /**
     * Stop without telling the server, as a page that unloads does: no close frame where
     * the socket can be cut, no truncation, the stored resume state stays for the next page.
     */
    abandonSession() {
        if (this.finished !== undefined)
            return;
        this.closing = true;
        clearTimeout(this.retryTimer);
        const live = this.live;
        if (live !== undefined) {
            this.detach(live);
            live.socket.terminate?.();
        }
        this.finished = new SessionClosed("session left to another client object");
        for (const waiter of this.waiters.splice(0))
            waiter.reject(this.finished);
    }
    /** The error of every call after the session ended (undefined while it goes on). */
    get closedError() {
        return this.finished;
    }
    /**
     * End the session on the server: a normal close (1000), which cancels the running
     * response. Between connections it resumes on one more connection only to close it.
     */
    async close() {
        if (this.finished !== undefined)
            return;
        this.closing = true;
        clearTimeout(this.retryTimer);
        const live = this.live;
        let ended = false;
        if (live?.ready === true && live.socket.readyState === OPEN) {
            ended = await this.closeAndWait(live.socket, 1000, "client closed");
        }
        if (live !== undefined)
            this.detach(live);
        const resume = this.state.resumePoint();
        if (!ended && resume !== undefined && this.state.state !== "closed") {
            const urls = this.options.urls;
            const order = urls.map((_, i) => urls[(this.urlIndex + i) % urls.length]);
            await endOnServer(order, resume, this.options);
        }
        this.finish("client_closed");
    }
    // -- one connection ---------------------------------------------------------------
    async connect() {
        if (this.finished !== undefined || this.closing)
            return;
        let protocols;
        try {
            protocols = await offeredProtocols(this.options.clientToken);
        }
        catch {
            this.afterConnection(undefined, ABNORMAL_CLOSE); // the backend did not answer: retry later
            return;
        }
        let socket;
        try {
            socket = this.options.socketFactory(sessionUrl(this.url, this.state.sessionId), protocols);
        }
        catch (err) {
            // A malformed URL or token: nothing a retry changes.
            this.finish(`cannot connect: ${err instanceof Error ? err.message : String(err)}`);
            return;
        }
        socket.binaryType = "arraybuffer";
        const live = { socket, opened: false, ready: false, lastHeard: now(), watchdog: undefined, refused: undefined, httpRefused: undefined };
        this.live = live;
        live.watchdog = setInterval(() => this.watch(live), 250);
        socket.addEventListener("open", () => {
            if (this.live !== live)
                return;
            live.opened = true;
            live.lastHeard = now();
            const first = this.state.sessionId !== undefined ? this.state.resumeMessage() : this.hooks.startMessage();
            socket.send(JSON.stringify(first));
        });
        socket.addEventListener("message", (event) => {
            if (this.live === live)
                this.onFrame(live, event.data);
        });
        socket.addEventListener("error", (event) => {
            // Browsers never say why a handshake failed; the ws package does, in its message.
            const status = /Unexpected server response: (\d+)/.exec(String(event.message ?? ""));
            if (this.live !== live)
                return;
            if (status !== null)
                live.httpRefused = Number(status[1]);
            // A failed handshake: some implementations (Node 20's global WebSocket) never
            // follow it with a close event.
            if (!live.opened)
                this.afterConnection(live, ABNORMAL_CLOSE);
        });
        socket.addEventListener("close", (event) => {
            if (this.live === live)
                this.afterConnection(live, event.code);
        });
    }
    watch(live) {
        const heard = now() - live.lastHeard;
        if (!live.opened) {
            if (heard > this.options.openTimeoutMs)
                this.abandon(live);
            return;
        }
        const interval = this.ready?.heartbeat_interval_ms ?? DEFAULT_HEARTBEAT_MS;
        if (heard > 2 * interval + 1000) {
            // Half-open: the server may never tell us. Reconnect and resume.
            this.silentDrops += 1;
            this.abandon(live);
        }
    }
    onFrame(live, data) {
        live.lastHeard = now();
        const hooks = this.hooks;
        let events;
        try {
            events = this.state.receive(decodeFrame(data));
        }
        catch {
            // A SequenceGap, a FrameError or AudioFrameError, invalid JSON. A frame we cannot use: drop this connection and resume from lastSeq, which
            // replays exactly what is missing.
            this.badFrames += 1;
            this.abandon(live);
            return;
        }
        for (const event of events) {
            if (event.type === "session.ready") {
                const ready = event;
                live.ready = true;
                hooks.beforeReady(ready, (frame) => live.socket.send(frame));
                this.onReady(ready);
                hooks.afterReady(ready, (message) => live.socket.send(JSON.stringify(message)));
            }
            else if (event.type === "error" && this.refusedNow(event)) {
                // Refused for now (store down): this connection carries no session; retry.
                live.refused = String(event["code"]);
                live.socket.close(1000, "refused");
                return;
            }
            hooks.observe(event);
            hooks.deliver(event);
        }
        hooks.changed();
        if (this.state.state === "closed") {
            // The resume was refused: the session cannot go on.
            this.detach(live);
            live.socket.close(1000, "resume refused");
            this.finish("resume_failed", true);
            return;
        }
        const ack = this.state.ackMessage();
        if (ack !== undefined)
            live.socket.send(JSON.stringify(ack));
    }
    /** An unsequenced error answering our session.start, or a retryable resume refusal. */
    refusedNow(event) {
        if (event.seq !== undefined)
            return false;
        if (this.state.state === "opening")
            return true;
        return this.state.state === "resuming" && errorDisposition(event["code"]) === "resume";
    }
    onReady(ready) {
        this.ready = ready;
        this.attempt = 0;
        // The server has detached any older connection by now: closing those ends nothing.
        for (const socket of this.abandoned.splice(0))
            socket.close(4000, "abandoned");
        for (const waiter of this.waiters.splice(0))
            waiter.resolve();
    }
    // -- between connections ------------------------------------------------------------
    /** Give up on a connection as on a drop: cut it where we can, else close it later. */
    abandon(live) {
        this.detach(live);
        if (live.socket.terminate !== undefined)
            live.socket.terminate();
        // A close frame other than 1000 would cancel the running response on the server;
        // the browser's socket can only send one, so it waits for the next session.ready.
        else if (live.opened)
            this.abandoned.push(live.socket);
        else
            live.socket.close();
        this.afterConnection(live, ABNORMAL_CLOSE);
    }
    detach(live) {
        clearInterval(live.watchdog);
        if (this.live === live)
            this.live = undefined;
    }
    /** Record how a connection ended; end the session if that was terminal, else reconnect. */
    afterConnection(live, code) {
        if (live !== undefined)
            this.detach(live);
        this.closeCodes.push(code);
        if (this.closing || this.finished !== undefined)
            return;
        const gotReady = live?.ready === true;
        if (live?.httpRefused === 401 || live?.httpRefused === 403) {
            this.authRefusal = `handshake refused: http ${live.httpRefused}`;
            return this.finish(this.authRefusal);
        }
        if (isAuthClose(code)) {
            this.authRefusal = `closed with ${code}`;
            return this.finish(this.authRefusal);
        }
        if (live?.refused !== undefined) {
            if (this.state.state === "opening" && errorDisposition(live.refused) === "terminal") {
                return this.finish(`session.start refused: ${live.refused}`);
            }
        }
        else if (this.state.resumePoint() === undefined) {
            // Connect failures before the first session.ready are retried like drops.
            if (live?.opened === true && closeDisposition(code) === "terminal")
                return this.finish(`closed with ${code}`);
        }
        else if (this.state.connectionLost(code) === "terminal") {
            return this.finish(`closed with ${code}`);
        }
        this.scheduleReconnect(gotReady);
    }
    scheduleReconnect(gotReady) {
        if (gotReady)
            this.attempt = 0;
        if (!this.options.reconnect || this.attempt >= this.options.backoff.maxAttempts) {
            return this.finish("reconnect_exhausted");
        }
        // With several workers listed, each reconnect tries the next one.
        this.urlIndex += 1;
        const delay = this.options.backoff.delay(this.attempt) * 1000;
        this.attempt += 1;
        this.reconnects += 1;
        this.retryTimer = setTimeout(() => void this.connect(), delay);
    }
    finish(reason, alreadyTruncated = false) {
        if (this.finished !== undefined)
            return;
        const hooks = this.hooks;
        if (!alreadyTruncated)
            for (const event of this.state.giveUp(reason))
                hooks.deliver(event);
        this.state.state = "closed";
        clearTimeout(this.retryTimer);
        if (this.live !== undefined) {
            const live = this.live;
            this.detach(live);
            if (live.socket.readyState === OPEN)
                live.socket.close(1000, "closed");
        }
        this.finished = this.authRefusal !== undefined ? new AuthenticationError(this.authRefusal) : new SessionClosed(`session closed: ${reason}`);
        for (const waiter of this.waiters.splice(0))
            waiter.reject(this.finished);
        hooks.ended(this.finished);
    }
    /** Close and wait for the closing handshake; whether the server answered it in time. */
    closeAndWait(socket, code, reason) {
        return new Promise((resolve) => {
            const timer = setTimeout(() => resolve(false), this.options.closeTimeoutMs);
            socket.addEventListener("close", (event) => {
                clearTimeout(timer);
                resolve(event.code !== ABNORMAL_CLOSE);
            });
            socket.close(code, reason);
        });
    }
}
function now() {
    return performance.now();
}

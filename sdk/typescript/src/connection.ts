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

import type { Backoff } from "./backoff.js";
import type { ClientSession } from "./client_session.js";
import { ABNORMAL_CLOSE, closeDisposition, errorDisposition, isAuthClose } from "./codes.js";
import { AuthenticationError, SessionClosed } from "./errors.js";
import { endOnServer } from "./ending.js";
import type { ClientMessage, ServerEvent, ServerMessageBase, SessionReady } from "./events.js";
import { decodeFrame, offeredProtocols, sessionUrl, type TokenSource } from "./frames.js";
import { OPEN, type SocketFactory, type SocketLike } from "./transport.js";

export type { TokenSource } from "./frames.js";

/** What the client's other parts do at fixed points of every connection. */
export interface ConnectionHooks {
  /** The `session.start` of a session that has no id yet. */
  startMessage(): ClientMessage;
  /** On `session.ready`, before anything new may go out (input audio the server lacks). */
  beforeReady(ready: SessionReady, sendFrame: (frame: Uint8Array) => void): void;
  /** On `session.ready`, once sends may go (requests and tool results the server may lack). */
  afterReady(ready: SessionReady, send: (message: ClientMessage) => void): void;
  /** Every event, before the application gets it. */
  observe(event: ServerEvent): void;
  /** Hand one event to the application. */
  deliver(event: ServerEvent): void;
  /** After each frame: what a new client object would need may have changed. */
  changed(): void;
  /** The session ended for good. */
  ended(error: SessionClosed): void;
}

/** Settings of a {@link ReconnectingConnection}. */
export interface ConnectionOptions {
  readonly urls: readonly string[];
  readonly socketFactory: SocketFactory;
  readonly clientToken?: TokenSource | undefined;
  readonly backoff: Backoff;
  readonly reconnect: boolean;
  /** Milliseconds a handshake may take before the attempt counts as failed. */
  readonly openTimeoutMs: number;
  /** Milliseconds `close()` may take, the extra connection between connections included. */
  readonly closeTimeoutMs: number;
}

interface Live {
  readonly socket: SocketLike;
  opened: boolean;
  ready: boolean;
  lastHeard: number;
  watchdog: ReturnType<typeof setInterval> | undefined;
  /** An unsequenced refusal of our session.start or a transient refusal of the resume. */
  refused: string | undefined;
  /** The handshake was refused with HTTP 401/403 (seen only where the library says so). */
  httpRefused: number | undefined;
}

const DEFAULT_HEARTBEAT_MS = 15_000;

/** The connections of one session, one at a time, and the events they bring. */
export class ReconnectingConnection {
  /** Reconnect attempts made so far. */
  reconnects = 0;
  /** Every connection's close code, in order (1006: no closing handshake). */
  readonly closeCodes: number[] = [];
  /** Connections dropped because a frame could not be used (a seq gap, a bad frame). */
  badFrames = 0;
  /** Connections dropped because nothing arrived for two heartbeat intervals. */
  silentDrops = 0;
  /** The last `session.ready`. */
  ready: SessionReady | undefined;
  private urlIndex = 0;
  private attempt = 0;
  private live: Live | undefined;
  private closing = false;
  private finished: SessionClosed | undefined;
  private authRefusal: string | undefined;
  private hooks: ConnectionHooks | undefined;
  private waiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** Sockets given up without a way to cut them: closed once the session is ready elsewhere. */
  private abandoned: SocketLike[] = [];

  constructor(
    readonly state: ClientSession,
    private readonly options: ConnectionOptions,
  ) {
    if (options.urls.length === 0) throw new Error("at least one url");
  }

  /** The URL the next connection goes to. */
  get url(): string {
    return this.options.urls[this.urlIndex % this.options.urls.length] as string;
  }

  /** Whether a connection carries the session now (its `session.ready` came). */
  get connected(): boolean {
    return this.live?.ready === true;
  }

  /** Start connecting. */
  start(hooks: ConnectionHooks): void {
    this.hooks = hooks;
    void this.connect();
  }

  /** Send one client message, waiting for a (re)connected session first. */
  async send(message: ClientMessage): Promise<void> {
    for (;;) {
      if (this.finished !== undefined) throw this.finished;
      const live = this.live;
      if (live?.ready === true && live.socket.readyState === OPEN) {
        live.socket.send(JSON.stringify(message));
        return;
      }
      await new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    }
  }

  /** Send a binary frame on the current connection; nothing while there is none. */
  sendFrameIfConnected(frame: Uint8Array): void {
    const live = this.live;
    if (live?.ready === true && live.socket.readyState === OPEN) live.socket.send(frame);
  }

  /** The network is back or the page visible: a reconnect waiting out its backoff goes now; a live connection's silence is checked now. */
  wake(): void {
    if (this.finished !== undefined || this.closing) return;
    if (this.live !== undefined) return this.watch(this.live);
    clearTimeout(this.retryTimer);
    void this.connect();
  }

  /** Cut the current connection as a network failure would (no close frame where possible). */
  drop(): void {
    if (this.live !== undefined) this.abandon(this.live);
  }

  /**
   * Stop without telling the server, as a page that unloads does: no close frame where
   * the socket can be cut, no truncation, the stored resume state stays for the next page.
   */
  abandonSession(): void {
    if (this.finished !== undefined) return;
    this.closing = true;
    clearTimeout(this.retryTimer);
    const live = this.live;
    if (live !== undefined) {
      this.detach(live);
      live.socket.terminate?.();
    }
    this.finished = new SessionClosed("session left to another client object");
    for (const waiter of this.waiters.splice(0)) waiter.reject(this.finished);
  }

  /** The error of every call after the session ended (undefined while it goes on). */
  get closedError(): SessionClosed | undefined {
    return this.finished;
  }

  /**
   * End the session on the server: a normal close (1000), which cancels the running
   * response. Between connections it resumes on one more connection only to close it.
   */
  async close(): Promise<void> {
    if (this.finished !== undefined) return;
    this.closing = true;
    clearTimeout(this.retryTimer);
    const live = this.live;
    let ended = false;
    if (live?.ready === true && live.socket.readyState === OPEN) {
      ended = await this.closeAndWait(live.socket, 1000, "client closed");
    }
    if (live !== undefined) this.detach(live);
    const resume = this.state.resumePoint();
    if (!ended && resume !== undefined && this.state.state !== "closed") {
      const urls = this.options.urls;
      const order = urls.map((_, i) => urls[(this.urlIndex + i) % urls.length] as string);
      await endOnServer(order, resume, this.options);
    }
    this.finish("client_closed");
  }

  // -- one connection ---------------------------------------------------------------

  private async connect(): Promise<void> {
    if (this.finished !== undefined || this.closing) return;
    let protocols: string[];
    try {
      protocols = await offeredProtocols(this.options.clientToken);
    } catch {
      this.afterConnection(undefined, ABNORMAL_CLOSE); // the backend did not answer: retry later
      return;
    }
    let socket: SocketLike;
    try {
      socket = this.options.socketFactory(sessionUrl(this.url, this.state.sessionId), protocols);
    } catch (err) {
      // A malformed URL or token: nothing a retry changes.
      this.finish(`cannot connect: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    socket.binaryType = "arraybuffer";
    const live: Live = { socket, opened: false, ready: false, lastHeard: now(), watchdog: undefined, refused: undefined, httpRefused: undefined };
    this.live = live;
    live.watchdog = setInterval(() => this.watch(live), 250);
    socket.addEventListener("open", () => {
      if (this.live !== live) return;
      live.opened = true;
      live.lastHeard = now();
      const first = this.state.sessionId !== undefined ? this.state.resumeMessage() : (this.hooks as ConnectionHooks).startMessage();
      socket.send(JSON.stringify(first));
    });
    socket.addEventListener("message", (event) => {
      if (this.live === live) this.onFrame(live, event.data);
    });
    socket.addEventListener("error", (event) => {
      // Browsers never say why a handshake failed; the ws package does, in its message.
      const status = /Unexpected server response: (\d+)/.exec(String((event as { message?: unknown }).message ?? ""));
      if (this.live !== live) return;
      if (status !== null) live.httpRefused = Number(status[1]);
      // A failed handshake: some implementations (Node 20's global WebSocket) never
      // follow it with a close event.
      if (!live.opened) this.afterConnection(live, ABNORMAL_CLOSE);
    });
    socket.addEventListener("close", (event) => {
      if (this.live === live) this.afterConnection(live, event.code);
    });
  }

  private watch(live: Live): void {
    const heard = now() - live.lastHeard;
    if (!live.opened) {
      if (heard > this.options.openTimeoutMs) this.abandon(live);
      return;
    }
    const interval = this.ready?.heartbeat_interval_ms ?? DEFAULT_HEARTBEAT_MS;
    if (heard > 2 * interval + 1000) {
      // Half-open: the server may never tell us. Reconnect and resume.
      this.silentDrops += 1;
      this.abandon(live);
    }
  }

  private onFrame(live: Live, data: unknown): void {
    live.lastHeard = now();
    const hooks = this.hooks as ConnectionHooks;
    let events: ServerEvent[];
    try {
      events = this.state.receive(decodeFrame(data));
    } catch {
      // A SequenceGap, a FrameError or AudioFrameError, invalid JSON. A frame we cannot use: drop this connection and resume from lastSeq, which
      // replays exactly what is missing.
      this.badFrames += 1;
      this.abandon(live);
      return;
    }
    for (const event of events) {
      if (event.type === "session.ready") {
        const ready = event as SessionReady;
        live.ready = true;
        hooks.beforeReady(ready, (frame) => live.socket.send(frame));
        this.onReady(ready);
        hooks.afterReady(ready, (message) => live.socket.send(JSON.stringify(message)));
      } else if (event.type === "error" && this.refusedNow(event)) {
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
    if (ack !== undefined) live.socket.send(JSON.stringify(ack));
  }

  /** An unsequenced error answering our session.start, or a retryable resume refusal. */
  private refusedNow(event: ServerMessageBase): boolean {
    if (event.seq !== undefined) return false;
    if (this.state.state === "opening") return true;
    return this.state.state === "resuming" && errorDisposition(event["code"]) === "resume";
  }

  private onReady(ready: SessionReady): void {
    this.ready = ready;
    this.attempt = 0;
    // The server has detached any older connection by now: closing those ends nothing.
    for (const socket of this.abandoned.splice(0)) socket.close(4000, "abandoned");
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
  }

  // -- between connections ------------------------------------------------------------

  /** Give up on a connection as on a drop: cut it where we can, else close it later. */
  private abandon(live: Live): void {
    this.detach(live);
    if (live.socket.terminate !== undefined) live.socket.terminate();
    // A close frame other than 1000 would cancel the running response on the server;
    // the browser's socket can only send one, so it waits for the next session.ready.
    else if (live.opened) this.abandoned.push(live.socket);
    else live.socket.close();
    this.afterConnection(live, ABNORMAL_CLOSE);
  }

  private detach(live: Live): void {
    clearInterval(live.watchdog);
    if (this.live === live) this.live = undefined;
  }

  /** Record how a connection ended; end the session if that was terminal, else reconnect. */
  private afterConnection(live: Live | undefined, code: number): void {
    if (live !== undefined) this.detach(live);
    this.closeCodes.push(code);
    if (this.closing || this.finished !== undefined) return;
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
    } else if (this.state.resumePoint() === undefined) {
      // Connect failures before the first session.ready are retried like drops.
      if (live?.opened === true && closeDisposition(code) === "terminal") return this.finish(`closed with ${code}`);
    } else if (this.state.connectionLost(code) === "terminal") {
      return this.finish(`closed with ${code}`);
    }
    this.scheduleReconnect(gotReady);
  }

  private scheduleReconnect(gotReady: boolean): void {
    if (gotReady) this.attempt = 0;
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

  private finish(reason: string, alreadyTruncated = false): void {
    if (this.finished !== undefined) return;
    const hooks = this.hooks as ConnectionHooks;
    if (!alreadyTruncated) for (const event of this.state.giveUp(reason)) hooks.deliver(event);
    this.state.state = "closed";
    clearTimeout(this.retryTimer);
    if (this.live !== undefined) {
      const live = this.live;
      this.detach(live);
      if (live.socket.readyState === OPEN) live.socket.close(1000, "closed");
    }
    this.finished = this.authRefusal !== undefined ? new AuthenticationError(this.authRefusal) : new SessionClosed(`session closed: ${reason}`);
    for (const waiter of this.waiters.splice(0)) waiter.reject(this.finished);
    hooks.ended(this.finished);
  }

  /** Close and wait for the closing handshake; whether the server answered it in time. */
  private closeAndWait(socket: SocketLike, code: number, reason: string): Promise<boolean> {
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

function now(): number {
  return performance.now();
}

/**
 * The SDK's facade: one session over one (re)connecting WebSocket.
 *
 * ```ts
 * const client = new SessionClient({ url: "wss://voice.example.com/", clientToken: () => fetchToken() });
 * await client.open();
 * client.on("response.text.delta", (e) => render(e.delta));
 * const result = await client.ask("hello");
 * ```
 * It reconnects by itself after a dropped connection (jittered exponential backoff),
 * resumes from the last seq it handed the application, and hands each event once, in
 * order. A response that can no longer finish is reported as `response.truncated`.
 * `close()` ends the session on the server, also between connections.
 * @packageDocumentation
 */
import { Backoff } from "./backoff.js";
import { ClientSession } from "./client_session.js";
import { ReconnectingConnection } from "./connection.js";
import { Emitter, EventQueue } from "./emitter.js";
import { ClientError } from "./errors.js";
import { Microphone } from "./microphone.js";
import { watchPageLifecycle } from "./lifecycle.js";
import { ResponseRequests } from "./requests.js";
import { collectResponse } from "./response_result.js";
import { MemoryResumeStore } from "./resume_store.js";
import { ToolBox } from "./tools.js";
import { globalSocketFactory } from "./transport.js";
/** One session over one (re)connecting WebSocket. */
export class SessionClient {
    /** Dedup by seq, last seen, resume decisions. */
    state;
    /** Declared tools, their handlers, results not yet acknowledged. */
    toolbox = new ToolBox();
    connection;
    /** Numbers input audio chunks and keeps the last second for a resend. */
    microphone;
    options;
    emitter = new Emitter();
    queue;
    requests = new ResponseRequests();
    store;
    firstReady;
    unwatchPage = () => undefined;
    /** Nothing connects until {@link open}. */
    constructor(options) {
        this.options = options;
        const factory = options.socketFactory ?? globalSocketFactory();
        if (factory === undefined)
            throw new ClientError("no WebSocket here: pass socketFactory (under Node 20: nodeSocketFactory())");
        this.state = new ClientSession(options.ackEvery ?? 32);
        this.store = options.resumeStore ?? new MemoryResumeStore();
        this.queue = options.bufferEvents === false ? undefined : new EventQueue();
        this.microphone = new Microphone(Number(options.audio?.["sample_rate"] ?? 16000));
        for (const tool of options.tools ?? [])
            this.toolbox.register(tool.spec, tool.handler);
        this.connection = new ReconnectingConnection(this.state, {
            urls: typeof options.url === "string" ? [options.url] : options.url,
            socketFactory: factory,
            clientToken: options.clientToken,
            backoff: options.backoff ?? new Backoff(),
            reconnect: options.reconnect ?? true,
            openTimeoutMs: options.openTimeoutMs ?? 10_000,
            closeTimeoutMs: options.closeTimeoutMs ?? 5_000,
        });
    }
    // -- lifecycle ----------------------------------------------------------------------
    /**
     * Connect and wait for `session.ready`. With a resume state in the store (a page that
     * reloaded), it resumes that session; otherwise it starts a new one.
     */
    open() {
        if (this.firstReady !== undefined)
            return this.firstReady;
        const stored = this.store.load();
        if (stored !== undefined) {
            this.state.restore(stored);
            for (const [callId, message] of Object.entries(stored.toolResults))
                this.toolbox.unacknowledged.set(callId, message);
            this.toolbox.started.push(...stored.startedCalls);
        }
        this.firstReady = new Promise((resolve, reject) => {
            const timer = setTimeout(() => {
                reject(new ClientError("no session.ready in time"));
                void this.close();
            }, this.options.openTimeoutMs ?? 10_000);
            const offReady = this.emitter.on("session.ready", (ready) => {
                clearTimeout(timer);
                offReady();
                resolve(ready);
            });
            if (this.options.pageLifecycle ?? true)
                this.unwatchPage = watchPageLifecycle(this);
            this.connection.start(this.hooks((error) => {
                clearTimeout(timer);
                reject(error);
            }));
        });
        return this.firstReady;
    }
    /** End the session on the server (a normal close, which cancels the running response). */
    async close() {
        await this.connection.close();
    }
    /** The network came back or the page is visible again: reconnect now rather than after the backoff; check the watchdog now. */
    wake(_reason) {
        this.connection.wake();
    }
    /** Cut the connection as a network failure would; the client resumes by itself. */
    drop() {
        this.connection.drop();
    }
    /**
     * Stop here without ending the session, as a page that unloads: the resume state stays
     * in the store, and a new client object with the same store resumes the session.
     */
    abandon() {
        this.unwatchPage();
        this.connection.abandonSession();
        const error = this.connection.closedError;
        if (error !== undefined)
            this.queue?.end(error);
    }
    /** The session's id once ready. */
    get sessionId() {
        return this.state.sessionId;
    }
    /** The last seq handed to the application. */
    get lastSeq() {
        return this.state.lastSeq;
    }
    /** Whether a connection carries the session now. */
    get connected() {
        return this.connection.connected;
    }
    // -- receiving ----------------------------------------------------------------------
    /** Call `listener` for each event of `type` (`"*"`: every event); returns the remover. */
    on(type, listener) {
        return this.emitter.on(type, listener);
    }
    /** The next event; rejects with {@link SessionClosed} once the session ended. */
    nextEvent() {
        return this.pull().next();
    }
    /** Every event once, in order, until the session ends. */
    async *events() {
        const queue = this.pull();
        for (;;) {
            try {
                yield await queue.next();
            }
            catch {
                return;
            }
        }
    }
    /** Read events until the current response ends (done or truncated). */
    collectResponse() {
        return collectResponse(this.pull());
    }
    /** Send a user turn, start a response and wait for it to end (tools run meanwhile). */
    async ask(text, options = {}) {
        await this.createResponse(text, options);
        return this.collectResponse();
    }
    // -- sending ------------------------------------------------------------------------
    /** Send one client message, waiting for a (re)connected session first. */
    send(message) {
        return this.connection.send(message);
    }
    /** Add a user turn without starting a response. */
    sendText(text) {
        return this.send({ type: "input.text", text });
    }
    /** Start a response, adding `text` as a user turn first; sent again after a resume until answered. */
    createResponse(text, options = {}) {
        return this.sendRequest({
            type: "response.create",
            ...(text !== undefined && { input: text }),
            ...(options.maxOutputTokens !== undefined && { max_output_tokens: options.maxOutputTokens }),
            ...(options.responseFormat !== undefined && { response_format: { type: "json_schema", schema: options.responseFormat } }),
        });
    }
    /** Continue an unfinished response (failed, incomplete, interrupted) where it stopped. */
    continueResponse(responseId, maxOutputTokens) {
        return this.sendRequest({
            type: "response.continue",
            response_id: responseId,
            ...(maxOutputTokens !== undefined && { max_output_tokens: maxOutputTokens }),
        });
    }
    /** Stop the running response, keeping what was rendered (or heard) in the history. */
    interrupt(options = {}) {
        return this.send({
            type: "response.interrupt",
            ...(options.renderedChars !== undefined && { rendered_chars: options.renderedChars }),
            ...(options.playedMs !== undefined && { played_ms: Math.max(0, Math.round(options.playedMs)) }),
            ...(options.responseId !== undefined && { response_id: options.responseId }),
        });
    }
    /** Stop the running response and drop it from the history. */
    cancel(responseId) {
        return this.send({ type: "response.cancel", ...(responseId !== undefined && { response_id: responseId }) });
    }
    /** Application-level ping; the server answers `pong`. */
    ping(requestId) {
        return this.send({ type: "ping", ...(requestId !== undefined && { id: requestId }) });
    }
    // -- voice --------------------------------------------------------------------------
    /**
     * Send microphone PCM16 (little-endian bytes, or samples), any length: cut into chunks
     * of at most 100 ms. While disconnected, the last second is kept for the resend after
     * the resume. `last` flushes the remainder and flags the final chunk (manual turns).
     */
    sendAudio(pcm, last = false) {
        const bytes = pcm instanceof Int16Array ? int16Bytes(pcm) : pcm;
        for (const frame of this.microphone.frames(bytes, last))
            this.connection.sendFrameIfConnected(frame);
    }
    /** Make the buffered input audio a user turn (manual turn detection). */
    commitAudio() {
        return this.send({ type: "input_audio.commit" });
    }
    /** Drop the buffered, uncommitted input audio. */
    clearAudio() {
        return this.send({ type: "input_audio.clear" });
    }
    /** Tell the server how much of a response's audio the user has heard (send it regularly). */
    reportPlayback(responseId, playedMs) {
        return this.send({ type: "output_audio.played", response_id: responseId, played_ms: Math.max(0, Math.round(playedMs)) });
    }
    // -- tools --------------------------------------------------------------------------
    /** Declare a tool (with a handler, it runs each call once); on an open session, update it. */
    async registerTool(spec, handler) {
        this.toolbox.register(spec, handler);
        if (this.state.sessionId !== undefined)
            await this.send({ type: "session.update", tools: this.toolbox.declarations() ?? [] });
    }
    /** Answer a `response.tool_call` yourself (kept and sent again until acknowledged). */
    async sendToolResult(callId, output = null, error) {
        const message = this.toolbox.result(callId, output, error);
        this.saveState();
        await this.send(message);
    }
    // -- what the connection asks of the facade -------------------------------------------
    hooks(failed) {
        return {
            startMessage: () => this.state.startMessage({
                instructions: this.options.instructions,
                settings: this.options.maxOutputTokens !== undefined ? { max_output_tokens: this.options.maxOutputTokens } : undefined,
                audio: this.options.audio,
                tools: this.toolbox.declarations(),
            }),
            beforeReady: (ready, sendFrame) => {
                // Sent before any new chunk may go out, or those would overtake them.
                if (typeof ready.audio_in_seq === "number")
                    for (const frame of this.microphone.resendAfter(ready.audio_in_seq))
                        sendFrame(frame);
            },
            afterReady: (ready, send) => {
                this.requests.afterReady(ready, send);
                for (const message of this.toolbox.unacknowledged.values())
                    send(message);
                for (const call of ready.pending_tool_calls ?? []) {
                    if (!this.toolbox.unacknowledged.has(call.call_id))
                        this.maybeRun(call);
                }
            },
            observe: (event) => this.observe(event),
            deliver: (event) => {
                this.queue?.put(event);
                this.emitter.emit(event);
            },
            changed: () => this.saveState(),
            ended: (error) => {
                this.unwatchPage();
                this.store.clear();
                this.queue?.end(error);
                failed(error);
            },
        };
    }
    observe(event) {
        this.requests.observe(event);
        if (event.type === "response.tool_call")
            this.maybeRun(event);
        else if (event.type === "tool.result.accepted")
            this.toolbox.acknowledged(String(event["call_id"]));
        else if (event.type === "error" && (event["code"] === "tool_call_closed" || event["code"] === "unknown_tool_call")) {
            // Refused for good: sending it again after a reconnect would change nothing.
            this.toolbox.acknowledged(String(event["request_id"]));
        }
    }
    maybeRun(call) {
        if ((this.options.runTools ?? true) === false || !this.toolbox.claim(call))
            return;
        this.saveState();
        void this.toolbox.run(call).then((message) => {
            this.saveState();
            // Kept until acknowledged: a send lost with a connection goes again after the resume.
            this.send(message).catch(() => undefined);
        });
    }
    async sendRequest(message) {
        const tracked = this.requests.track(message);
        await this.send(tracked);
    }
    pull() {
        if (this.queue === undefined)
            throw new ClientError("events are not buffered (bufferEvents: false); use on()");
        return this.queue;
    }
    saveState() {
        const point = this.state.resumePoint();
        if (point === undefined || this.state.state === "closed")
            return;
        this.store.save({
            ...point,
            openResponses: point.openResponses ?? [],
            endedResponses: point.endedResponses ?? [],
            toolResults: Object.fromEntries(this.toolbox.unacknowledged),
            startedCalls: [...this.toolbox.started],
        });
    }
}
function int16Bytes(samples) {
    const out = new Uint8Array(samples.length * 2);
    const view = new DataView(out.buffer);
    for (let i = 0; i < samples.length; i++)
        view.setInt16(i * 2, samples[i], true);
    return out;
}

/**
 * Where a session's resume state is kept between connections and between client objects:
 * memory (the default, and for tests) or a Web Storage such as `sessionStorage`, so a
 * page that reloads resumes its session where the old page stopped.
 * @packageDocumentation
 */
import { ENDED_KEPT } from "./client_session.js";
import { KEPT_STARTED } from "./tools.js";
/** Keeps the state in this object only (lost with it). */
export class MemoryResumeStore {
    state;
    load() {
        return this.state;
    }
    save(state) {
        this.state = state;
    }
    clear() {
        this.state = undefined;
    }
}
/**
 * Keeps the state as JSON under one key of a Web Storage. Prefer `sessionStorage`: it is
 * per tab, so two tabs never resume the same session, and it ends with the tab. The
 * resume token is a secret of the session: never put it where other origins can read it.
 */
export class WebResumeStore {
    storage;
    key;
    constructor(storage, key = "wsserver.session") {
        this.storage = storage;
        this.key = key;
    }
    load() {
        const text = this.storage.getItem(this.key);
        if (text === null)
            return undefined;
        try {
            return wellFormed(JSON.parse(text));
        }
        catch {
            return undefined; // written by something else: start afresh
        }
    }
    save(state) {
        try {
            this.storage.setItem(this.key, JSON.stringify(state));
        }
        catch {
            // Storage full (its quota is the origin's, shared with the page's own data): the
            // session goes on here, but a reload must not resume from an older record (it would
            // replay from an older seq and run its tool calls again), so it starts afresh.
            this.storage.removeItem(this.key);
        }
    }
    clear() {
        this.storage.removeItem(this.key);
    }
}
/**
 * The record if every field has its type, else `undefined` (start afresh): a record some
 * other script or an older SDK wrote must not throw in `open()`, nor send values that are
 * not tool results to the server as tool results. Missing lists default to empty.
 */
function wellFormed(value) {
    if (typeof value !== "object" || value === null)
        return undefined;
    const state = value;
    const { sessionId, resumeToken, lastSeq } = state;
    if (typeof sessionId !== "string" || typeof resumeToken !== "string")
        return undefined;
    if (!isSeq(lastSeq))
        return undefined;
    const openResponses = state.openResponses ?? [];
    const toolResults = state.toolResults ?? {};
    const startedCalls = state.startedCalls ?? [];
    const endedResponses = state.endedResponses ?? [];
    if (!Array.isArray(openResponses) || !openResponses.every(isOpenResponse))
        return undefined;
    if (!Array.isArray(startedCalls) || !startedCalls.every((id) => typeof id === "string"))
        return undefined;
    if (!Array.isArray(endedResponses) || !endedResponses.every((id) => typeof id === "string"))
        return undefined;
    if (typeof toolResults !== "object" || toolResults === null || Array.isArray(toolResults))
        return undefined;
    if (!Object.values(toolResults).every(isToolResult))
        return undefined;
    return {
        sessionId,
        resumeToken,
        lastSeq,
        openResponses: openResponses,
        // As many as the session keeps: a longer list is not one it wrote.
        endedResponses: endedResponses.slice(-ENDED_KEPT),
        toolResults: toolResults,
        // As many as the client keeps: a longer list is not one it wrote.
        startedCalls: startedCalls.slice(-KEPT_STARTED),
    };
}
function isSeq(value) {
    return Number.isSafeInteger(value) && value >= 0;
}
function isOpenResponse(value) {
    return Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && isSeq(value[1]);
}
function isToolResult(value) {
    return typeof value === "object" && value !== null && value.type === "tool.result";
}

/**
 * Where a session's resume state is kept between connections and between client objects:
 * memory (the default, and for tests) or a Web Storage such as `sessionStorage`, so a
 * page that reloads resumes its session where the old page stopped.
 * @packageDocumentation
 */
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
            const state = JSON.parse(text);
            if (typeof state.sessionId !== "string" || typeof state.resumeToken !== "string" || typeof state.lastSeq !== "number") {
                return undefined;
            }
            return {
                sessionId: state.sessionId,
                resumeToken: state.resumeToken,
                lastSeq: state.lastSeq,
                openResponses: Array.isArray(state.openResponses) ? state.openResponses : [],
                toolResults: state.toolResults ?? {},
                startedCalls: Array.isArray(state.startedCalls) ? state.startedCalls : [],
            };
        }
        catch {
            return undefined; // written by something else: start afresh
        }
    }
    save(state) {
        this.storage.setItem(this.key, JSON.stringify(state));
    }
    clear() {
        this.storage.removeItem(this.key);
    }
}

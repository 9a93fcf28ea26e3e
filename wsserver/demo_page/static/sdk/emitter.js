/**
 * Typed listeners, and a queue for readers who pull events one at a time.
 * @packageDocumentation
 */
/** Listeners by event type; a listener that throws does not stop the others. */
export class Emitter {
    listeners = new Map();
    /** Call `listener` for every event of `type` (`"*"`: all); returns the function that removes it. */
    on(type, listener) {
        let set = this.listeners.get(type);
        if (set === undefined)
            this.listeners.set(type, (set = new Set()));
        const entry = listener;
        set.add(entry);
        return () => set.delete(entry);
    }
    /** Hand `event` to its listeners, then to the `"*"` listeners. */
    emit(event) {
        for (const key of [event.type, "*"]) {
            for (const listener of this.listeners.get(key) ?? []) {
                try {
                    listener(event);
                }
                catch (err) {
                    // An application bug must not break the session's bookkeeping.
                    queueMicrotask(() => {
                        throw err;
                    });
                }
            }
        }
    }
}
/** Events in order for a reader who pulls them; once ended, every read rejects. */
export class EventQueue {
    items = [];
    waiting = [];
    ended;
    /** Queue one more event. */
    put(event) {
        const reader = this.waiting.shift();
        if (reader !== undefined)
            reader.resolve(event);
        else
            this.items.push(event);
    }
    /** No more events: readers past the last one get `error`. */
    end(error) {
        this.ended = error;
        for (const reader of this.waiting.splice(0))
            reader.reject(error);
    }
    /** The next event (queued ones first, also after the end). */
    next() {
        const item = this.items.shift();
        if (item !== undefined)
            return Promise.resolve(item);
        if (this.ended !== undefined)
            return Promise.reject(this.ended);
        return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
    }
}

/**
 * Typed listeners, and a queue for readers who pull events one at a time.
 * @packageDocumentation
 */

import type { ServerEvent, ServerEventMap } from "./events.js";

/** What `on(type, listener)` accepts: a known event type, or `"*"` for every event. */
export type EventName = keyof ServerEventMap | "*";

/** The event a listener of `K` gets. */
export type EventOf<K extends EventName> = K extends keyof ServerEventMap ? ServerEventMap[K] : ServerEvent;

type Listener = (event: ServerEvent) => void;

/** Listeners by event type; a listener that throws does not stop the others. */
export class Emitter {
  private readonly listeners = new Map<string, Set<Listener>>();

  /** Call `listener` for every event of `type` (`"*"`: all); returns the function that removes it. */
  on<K extends EventName>(type: K, listener: (event: EventOf<K>) => void): () => void {
    let set = this.listeners.get(type);
    if (set === undefined) this.listeners.set(type, (set = new Set()));
    const entry = listener as Listener;
    set.add(entry);
    return () => set.delete(entry);
  }

  /** Hand `event` to its listeners, then to the `"*"` listeners. */
  emit(event: ServerEvent): void {
    for (const key of [event.type, "*"]) {
      for (const listener of this.listeners.get(key) ?? []) {
        try {
          listener(event);
        } catch (err) {
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
  private readonly items: ServerEvent[] = [];
  private readonly waiting: Array<{ resolve: (e: ServerEvent) => void; reject: (e: Error) => void }> = [];
  private ended: Error | undefined;

  /** Queue one more event. */
  put(event: ServerEvent): void {
    const reader = this.waiting.shift();
    if (reader !== undefined) reader.resolve(event);
    else this.items.push(event);
  }

  /** No more events: readers past the last one get `error`. */
  end(error: Error): void {
    this.ended = error;
    for (const reader of this.waiting.splice(0)) reader.reject(error);
  }

  /** The next event (queued ones first, also after the end). */
  next(): Promise<ServerEvent> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    if (this.ended !== undefined) return Promise.reject(this.ended);
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }
}

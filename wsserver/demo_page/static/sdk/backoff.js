/**
 * The wait between reconnect attempts: exponential with full jitter.
 * @packageDocumentation
 */
/** Jittered exponential backoff: before attempt `n` wait `uniform(0, min(cap, base·2ⁿ))`. */
export class Backoff {
    base;
    cap;
    maxAttempts;
    random;
    constructor(options = {}) {
        this.base = options.base ?? 0.1;
        this.cap = options.cap ?? 5;
        this.maxAttempts = options.maxAttempts ?? 12;
        this.random = options.random ?? Math.random;
    }
    /** The upper bound of the wait before attempt `attempt` (0-based), in seconds. */
    bound(attempt) {
        // 2 ** 1100 is Infinity; min() keeps it at the cap.
        return Math.min(this.cap, this.base * 2 ** attempt);
    }
    /** Seconds to wait before reconnect attempt `attempt` (0-based). */
    delay(attempt) {
        return this.random() * this.bound(attempt);
    }
}

/**
 * The wait between reconnect attempts: exponential with full jitter.
 * @packageDocumentation
 */

/** Settings of {@link Backoff}; every field has the Python SDK's default. */
export interface BackoffOptions {
  /** Seconds of the first attempt's bound (default 0.1). */
  readonly base?: number;
  /** Seconds no wait exceeds (default 5). */
  readonly cap?: number;
  /** Failed attempts in a row after which the client gives up (default 12). */
  readonly maxAttempts?: number;
  /** Uniform random number in [0, 1) (default `Math.random`); tests pass their own. */
  readonly random?: () => number;
}

/** Jittered exponential backoff: before attempt `n` wait `uniform(0, min(cap, base·2ⁿ))`. */
export class Backoff {
  readonly base: number;
  readonly cap: number;
  readonly maxAttempts: number;
  private readonly random: () => number;

  constructor(options: BackoffOptions = {}) {
    this.base = options.base ?? 0.1;
    this.cap = options.cap ?? 5;
    this.maxAttempts = options.maxAttempts ?? 12;
    this.random = options.random ?? Math.random;
  }

  /** The upper bound of the wait before attempt `attempt` (0-based), in seconds. */
  bound(attempt: number): number {
    // 2 ** 1100 is Infinity; min() keeps it at the cap.
    return Math.min(this.cap, this.base * 2 ** attempt);
  }

  /** Seconds to wait before reconnect attempt `attempt` (0-based). */
  delay(attempt: number): number {
    return this.random() * this.bound(attempt);
  }
}

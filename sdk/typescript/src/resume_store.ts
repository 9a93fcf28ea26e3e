/**
 * Where a session's resume state is kept between connections and between client objects:
 * memory (the default, and for tests) or a Web Storage such as `sessionStorage`, so a
 * page that reloads resumes its session where the old page stopped.
 * @packageDocumentation
 */

import type { ClientMessage } from "./events.js";
import { ENDED_KEPT } from "./client_session.js";
import { KEPT_STARTED } from "./tools.js";

/** What a new client object needs to take a session over from an old one. */
export interface ResumeState {
  readonly sessionId: string;
  readonly resumeToken: string;
  /** The highest seq handed to the application (and at least what was acked). */
  readonly lastSeq: number;
  /** Responses started and not ended, with the seq of their `response.created`. */
  readonly openResponses: ReadonlyArray<readonly [string, number]>;
  /** The last responses the application saw end: a second end after a takeover is dropped. */
  readonly endedResponses: ReadonlyArray<string>;
  /** Tool results sent and not yet acknowledged (sent again on resume), by call id. */
  readonly toolResults: { readonly [callId: string]: ClientMessage };
  /** Calls whose handler ran or runs here: never run twice, also across a reload. */
  readonly startedCalls: ReadonlyArray<string>;
}

/** Keeps one session's resume state; `load` before the first connection, `save` after changes. */
export interface ResumeStore {
  load(): ResumeState | undefined;
  save(state: ResumeState): void;
  clear(): void;
}

/** Keeps the state in this object only (lost with it). */
export class MemoryResumeStore implements ResumeStore {
  private state: ResumeState | undefined;

  load(): ResumeState | undefined {
    return this.state;
  }

  save(state: ResumeState): void {
    this.state = state;
  }

  clear(): void {
    this.state = undefined;
  }
}

/** The part of the Web Storage interface (`sessionStorage`, `localStorage`) used here. */
export interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/**
 * Keeps the state as JSON under one key of a Web Storage. Prefer `sessionStorage`: it is
 * per tab, so two tabs never resume the same session, and it ends with the tab. The
 * resume token is a secret of the session: never put it where other origins can read it.
 */
export class WebResumeStore implements ResumeStore {
  constructor(
    private readonly storage: StorageLike,
    private readonly key = "wsserver.session",
  ) {}

  load(): ResumeState | undefined {
    const text = this.storage.getItem(this.key);
    if (text === null) return undefined;
    try {
      return wellFormed(JSON.parse(text));
    } catch {
      return undefined; // written by something else: start afresh
    }
  }

  save(state: ResumeState): void {
    try {
      this.storage.setItem(this.key, JSON.stringify(state));
    } catch {
      // Storage full (its quota is the origin's, shared with the page's own data): the
      // session goes on here, but a reload must not resume from an older record (it would
      // replay from an older seq and run its tool calls again), so it starts afresh.
      this.storage.removeItem(this.key);
    }
  }

  clear(): void {
    this.storage.removeItem(this.key);
  }
}

/**
 * The record if every field has its type, else `undefined` (start afresh): a record some
 * other script or an older SDK wrote must not throw in `open()`, nor send values that are
 * not tool results to the server as tool results. Missing lists default to empty.
 */
function wellFormed(value: unknown): ResumeState | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const state = value as { [K in keyof ResumeState]?: unknown };
  const { sessionId, resumeToken, lastSeq } = state;
  if (typeof sessionId !== "string" || typeof resumeToken !== "string") return undefined;
  if (!isSeq(lastSeq)) return undefined;
  const openResponses = state.openResponses ?? [];
  const toolResults = state.toolResults ?? {};
  const startedCalls = state.startedCalls ?? [];
  const endedResponses = state.endedResponses ?? [];
  if (!Array.isArray(openResponses) || !openResponses.every(isOpenResponse)) return undefined;
  if (!Array.isArray(startedCalls) || !startedCalls.every((id) => typeof id === "string")) return undefined;
  if (!Array.isArray(endedResponses) || !endedResponses.every((id) => typeof id === "string")) return undefined;
  if (typeof toolResults !== "object" || toolResults === null || Array.isArray(toolResults)) return undefined;
  if (!Object.values(toolResults).every(isToolResult)) return undefined;
  return {
    sessionId,
    resumeToken,
    lastSeq,
    openResponses: openResponses as Array<readonly [string, number]>,
    // As many as the session keeps: a longer list is not one it wrote.
    endedResponses: (endedResponses as string[]).slice(-ENDED_KEPT),
    toolResults: toolResults as { [callId: string]: ClientMessage },
    // As many as the client keeps: a longer list is not one it wrote.
    startedCalls: (startedCalls as string[]).slice(-KEPT_STARTED),
  };
}

function isSeq(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isOpenResponse(value: unknown): boolean {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && isSeq(value[1]);
}

function isToolResult(value: unknown): boolean {
  return typeof value === "object" && value !== null && (value as { type?: unknown }).type === "tool.result";
}

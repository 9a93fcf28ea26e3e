/**
 * The messages of the native protocol, v1 (docs/PROTOCOL.md), as TypeScript types.
 *
 * Server messages are typed by their `type`; fields the SDK does not know yet stay
 * readable through the index signature. `response.audio.delta` is a binary frame on the
 * wire; the SDK hands it over as an event whose `audio` holds the PCM16 bytes.
 * `response.truncated` is never on the wire: the SDK makes it for a response that can no
 * longer end with `response.done`.
 * @packageDocumentation
 */

/** Any JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** Fields every server message has. */
export interface ServerMessageBase {
  readonly type: string;
  /** Session events only: 1, 2, 3, … per session. */
  readonly seq?: number;
  readonly [field: string]: unknown;
}

/** Token counts of a response. */
export interface Usage {
  readonly input_tokens: number;
  readonly output_tokens_generated: number;
  readonly output_tokens_delivered: number;
  readonly output_tokens_acknowledged?: number;
}

/** `session.ready`: the connection carries the session (connection message, no seq). */
export interface SessionReady extends ServerMessageBase {
  readonly type: "session.ready";
  readonly session_id: string;
  readonly resumed: boolean;
  readonly last_seq: number;
  readonly heartbeat_interval_ms: number;
  readonly resume_token?: string;
  readonly audio?: JsonObject;
  readonly audio_in_seq?: number;
  readonly pending_tool_calls?: ReadonlyArray<ToolCall>;
  readonly lost_after_seq?: number;
  readonly limits?: { readonly [name: string]: number };
}

/** `heartbeat` (connection message). */
export interface Heartbeat extends ServerMessageBase {
  readonly type: "heartbeat";
  readonly server_time_ms: number;
  readonly last_seq: number;
}

/** `error`: a session event once the connection carries a session, else a connection message. */
export interface ErrorEvent extends ServerMessageBase {
  readonly type: "error";
  readonly code: string;
  readonly message: string;
  readonly request_id?: string;
  readonly snapshot?: JsonObject;
}

/** `response.created`. */
export interface ResponseCreated extends ServerMessageBase {
  readonly type: "response.created";
  readonly response_id: string;
  readonly request_id?: string;
  readonly continues?: string;
}

/** `response.text.delta`. */
export interface TextDelta extends ServerMessageBase {
  readonly type: "response.text.delta";
  readonly response_id: string;
  readonly delta: string;
}

/** `response.audio.delta` (a binary frame on the wire). */
export interface AudioDelta extends ServerMessageBase {
  readonly type: "response.audio.delta";
  readonly response_id: string;
  /** PCM16 mono little-endian at the session's sample rate. */
  readonly audio: Uint8Array;
}

/** `response.done`: the one terminal event of a response. */
export interface ResponseDone extends ServerMessageBase {
  readonly type: "response.done";
  readonly response_id: string;
  readonly status: "completed" | "interrupted" | "cancelled" | "failed" | "incomplete";
  readonly reason?: string;
  readonly usage: Usage;
  readonly persisted_chars?: number;
  readonly audio_ms?: number;
  readonly played_ms?: number;
  readonly dropped_tool_calls?: ReadonlyArray<string>;
}

/** `response.truncated`: made by the SDK, never sent: the response will not end by itself. */
export interface ResponseTruncated extends ServerMessageBase {
  readonly type: "response.truncated";
  readonly response_id: string;
  /** `resume_failed`, `closed with <code>`, `reconnect_exhausted`, `client_closed`, `worker_lost`, … */
  readonly reason: string;
}

/** A complete, validated tool call (`response.tool_call`, or one of `pending_tool_calls`). */
export interface ToolCall {
  readonly response_id: string;
  readonly call_id: string;
  readonly name: string;
  readonly arguments: JsonValue;
}

/** `response.tool_call`: run it, then send a `tool.result`. */
export interface ToolCallEvent extends ServerMessageBase, ToolCall {
  readonly type: "response.tool_call";
}

/** `response.tool_call.delta`: provisional; show it, never run it. */
export interface ToolCallDelta extends ServerMessageBase {
  readonly type: "response.tool_call.delta";
  readonly response_id: string;
  readonly call_id: string;
  readonly name: string;
  readonly delta: string;
  readonly arguments: JsonValue;
  readonly provisional: true;
}

/** `tool.result.accepted`: the server has the call's result. */
export interface ToolResultAccepted extends ServerMessageBase {
  readonly type: "tool.result.accepted";
  readonly call_id: string;
  readonly duplicate: boolean;
}

/** Every server message with a known shape, by `type`. */
export interface ServerEventMap {
  "session.ready": SessionReady;
  heartbeat: Heartbeat;
  pong: ServerMessageBase & { readonly type: "pong"; readonly request_id?: string };
  error: ErrorEvent;
  "response.created": ResponseCreated;
  "response.text.delta": TextDelta;
  "response.audio.delta": AudioDelta;
  "response.done": ResponseDone;
  "response.truncated": ResponseTruncated;
  "response.tool_call": ToolCallEvent;
  "response.tool_call.delta": ToolCallDelta;
  "tool.result.accepted": ToolResultAccepted;
}

/** Any message the SDK hands the application. */
export type ServerEvent = ServerEventMap[keyof ServerEventMap] | ServerMessageBase;

/** A client message: an object with a `type` (and an optional request `id`). */
export interface ClientMessage {
  readonly type: string;
  readonly id?: string;
  readonly [field: string]: unknown;
}

/** Narrow an event to a known type: `if (isEvent(e, "response.done")) e.usage…`. */
export function isEvent<K extends keyof ServerEventMap>(
  event: ServerEvent,
  type: K,
): event is ServerEventMap[K] {
  return event.type === type;
}

/**
 * What the SDK hands back for a whole response: text, audio, tool calls, status, usage.
 * @packageDocumentation
 */

import type { EventQueue } from "./emitter.js";
import type { JsonValue, ServerEvent, ToolCallEvent, Usage } from "./events.js";

/** A finished (or truncated) response. */
export interface ResponseResult {
  readonly responseId: string;
  readonly text: string;
  /** `completed`, `interrupted`, `cancelled`, `failed`, `incomplete`, or `truncated`. */
  readonly status: string;
  readonly reason: string | undefined;
  readonly usage: Usage | undefined;
  /** Every event of the response except audio chunks (those are in `audio`). */
  readonly events: readonly ServerEvent[];
  /** The response's audio, PCM16 at the session's rate (empty without audio). */
  readonly audio: Uint8Array;
  readonly toolCalls: readonly ToolCallEvent[];
  /** The final structured output (`response.output_json.done`), when asked for. */
  readonly outputJson: JsonValue | undefined;
}

/** Read events until the current response ends (`response.done` or `response.truncated`). */
export async function collectResponse(queue: EventQueue): Promise<ResponseResult> {
  let responseId = "";
  const parts: string[] = [];
  const audio: Uint8Array[] = [];
  const events: ServerEvent[] = [];
  const toolCalls: ToolCallEvent[] = [];
  let outputJson: JsonValue | undefined;
  for (;;) {
    const event = await queue.next();
    switch (event.type) {
      case "response.created":
        responseId = String(event["response_id"]);
        break;
      case "response.text.delta":
        parts.push(String(event["delta"]));
        break;
      case "response.audio.delta":
        audio.push(event["audio"] as Uint8Array);
        continue;
      case "response.tool_call":
        toolCalls.push(event as ToolCallEvent);
        break;
      case "response.output_json.done":
        outputJson = event["value"] as JsonValue;
        break;
      case "response.done":
      case "response.truncated": {
        events.push(event);
        const status = event.type === "response.done" ? String(event["status"]) : "truncated";
        const reason = typeof event["reason"] === "string" ? event["reason"] : undefined;
        return {
          responseId: typeof event["response_id"] === "string" ? event["response_id"] : responseId,
          text: parts.join(""),
          status,
          reason,
          usage: event["usage"] as Usage | undefined,
          events,
          audio: joinBytes(audio),
          toolCalls,
          outputJson,
        };
      }
    }
    events.push(event);
  }
}

function joinBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

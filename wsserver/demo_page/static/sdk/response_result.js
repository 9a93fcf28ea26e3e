/**
 * What the SDK hands back for a whole response: text, audio, tool calls, status, usage.
 * @packageDocumentation
 */
/** Read events until the current response ends (`response.done` or `response.truncated`). */
export async function collectResponse(queue) {
    let responseId = "";
    const parts = [];
    const audio = [];
    const events = [];
    const toolCalls = [];
    let outputJson;
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
                audio.push(event["audio"]);
                continue;
            case "response.tool_call":
                toolCalls.push(event);
                break;
            case "response.output_json.done":
                outputJson = event["value"];
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
                    usage: event["usage"],
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
function joinBytes(parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    let offset = 0;
    for (const part of parts) {
        out.set(part, offset);
        offset += part.byteLength;
    }
    return out;
}

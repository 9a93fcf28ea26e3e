/**
 * The SDK's side of the tool loop: handlers, results kept until acknowledged.
 *
 * A handler runs at most once per call id: its result is kept until the server
 * acknowledges it (`tool.result.accepted`) and sent again after every `session.ready`
 * until then; the server applies it once either way. Calls a resumed session announces
 * as pending (`pending_tool_calls`) run if they never ran here.
 * @packageDocumentation
 */
/** How many started call ids are kept (the oldest go first). */
export const KEPT_STARTED = 256;
/** Declared tools, their handlers, and the results not yet acknowledged. */
export class ToolBox {
    specs = new Map();
    handlers = new Map();
    /** Call id → the `tool.result` sent and not yet acknowledged. */
    unacknowledged = new Map();
    /** Calls whose handler ran or runs here (never twice), oldest first. */
    started = [];
    /** Declare a tool, and how to run it. */
    register(spec, handler) {
        this.specs.set(spec.name, {
            name: spec.name,
            description: spec.description ?? "",
            parameters: spec.parameters ?? { type: "object" },
        });
        if (handler !== undefined)
            this.handlers.set(spec.name, handler);
    }
    /** The tools for `session.start` (`undefined` when there are none). */
    declarations() {
        return this.specs.size === 0 ? undefined : [...this.specs.values()];
    }
    /** Whether this call should run here now (a handler exists and it never ran); marks it. */
    claim(call) {
        if (!this.handlers.has(call.name) || this.started.includes(call.call_id))
            return false;
        this.started.push(call.call_id);
        if (this.started.length > KEPT_STARTED)
            this.started.shift();
        return true;
    }
    /** Run a claimed call's handler; the `tool.result` to send (kept until acknowledged). */
    async run(call) {
        const handler = this.handlers.get(call.name);
        // The call id doubles as the request id: a refusal names it.
        const message = { type: "tool.result", call_id: call.call_id, id: call.call_id };
        try {
            if (handler === undefined)
                throw new Error(`no handler for ${call.name}`);
            message["output"] = await handler(call.arguments, call);
        }
        catch (err) {
            // The model is told the tool failed, and why.
            message["error"] = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
        }
        const result = message;
        this.unacknowledged.set(call.call_id, result);
        return result;
    }
    /** A result the application sends itself (kept until acknowledged). */
    result(callId, output, error) {
        const message = { type: "tool.result", call_id: callId, output, id: callId };
        if (error !== undefined)
            message["error"] = error;
        const result = message;
        this.unacknowledged.set(callId, result);
        return result;
    }
    /** The server has the result (applied now or before), or refused it for good. */
    acknowledged(callId) {
        this.unacknowledged.delete(callId);
    }
}

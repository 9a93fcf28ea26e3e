/**
 * The WebSocket the SDK drives: the browser's (WHATWG) interface, which Node's global
 * `WebSocket` and the `ws` package both implement.
 * @packageDocumentation
 */
/** WebSocket `readyState` of an open connection. */
export const OPEN = 1;
/** The encoding subprotocol of JSON text frames. */
export const JSON_SUBPROTOCOL = "wsserver.v1.json";
/** Prefix of the subprotocol entry that carries a client token. */
export const TOKEN_SUBPROTOCOL_PREFIX = "wsserver.token.";
/**
 * The factory of the environment's global `WebSocket` (browsers, Node 22+, Node 20 with
 * `--experimental-websocket`), or `undefined` where there is none.
 */
export function globalSocketFactory() {
    const ctor = globalThis.WebSocket;
    return ctor === undefined ? undefined : (url, protocols) => new ctor(url, protocols);
}
/** The bytes of a binary message, whatever the implementation hands over. */
export function binaryData(data) {
    if (data instanceof Uint8Array)
        return data;
    if (data instanceof ArrayBuffer)
        return new Uint8Array(data);
    if (ArrayBuffer.isView(data))
        return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (Array.isArray(data) && data.every((part) => part instanceof Uint8Array)) {
        // ws with binaryType "fragments" (never asked for, but cheap to accept).
        const parts = data;
        const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
        let offset = 0;
        for (const part of parts) {
            out.set(part, offset);
            offset += part.byteLength;
        }
        return out;
    }
    return undefined;
}

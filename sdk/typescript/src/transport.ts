/**
 * The WebSocket the SDK drives: the browser's (WHATWG) interface, which Node's global
 * `WebSocket` and the `ws` package both implement.
 * @packageDocumentation
 */

/** The part of a WebSocket the SDK uses. */
export interface SocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly protocol: string;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open", listener: () => void): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close", listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: "error", listener: (event: unknown) => void): void;
  /** `ws` only: cut the TCP connection without a close frame. */
  terminate?: () => void;
}

/** Opens one WebSocket: `new WebSocket(url, protocols)` or an equivalent. */
export type SocketFactory = (url: string, protocols: string[]) => SocketLike;

/** WebSocket `readyState` of an open connection. */
export const OPEN = 1;

/** The encoding subprotocol of JSON text frames. */
export const JSON_SUBPROTOCOL = "wsserver.v1.json";
/** Prefix of the subprotocol entry that carries a client token. */
export const TOKEN_SUBPROTOCOL_PREFIX = "wsserver.token.";

type SocketConstructor = new (url: string, protocols: string[]) => SocketLike;

/**
 * The factory of the environment's global `WebSocket` (browsers, Node 22+, Node 20 with
 * `--experimental-websocket`), or `undefined` where there is none.
 */
export function globalSocketFactory(): SocketFactory | undefined {
  const ctor = (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
  return ctor === undefined ? undefined : (url, protocols) => new ctor(url, protocols);
}

/** The bytes of a binary message, whatever the implementation hands over. */
export function binaryData(data: unknown): Uint8Array | undefined {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (Array.isArray(data) && data.every((part) => part instanceof Uint8Array)) {
    // ws with binaryType "fragments" (never asked for, but cheap to accept).
    const parts = data as Uint8Array[];
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

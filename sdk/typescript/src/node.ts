/**
 * Sockets under Node: Node's global `WebSocket` where there is one (Node 22, or Node 20
 * with `--experimental-websocket`), else the `ws` package (an optional peer dependency).
 * Not imported by the browser build.
 * @packageDocumentation
 */

import type { SocketFactory, SocketLike } from "./transport.js";
import { globalSocketFactory } from "./transport.js";

/** Options of {@link nodeSocketFactory}. */
export interface NodeSocketOptions {
  /** An API key or a JWT, sent as `Authorization: Bearer` (servers only: never in a page). */
  readonly apiKey?: string;
  /** Use the `ws` package even where a global `WebSocket` exists (needed for `apiKey`). */
  readonly preferWs?: boolean;
}

type WsConstructor = new (url: string, protocols: string[], options: Record<string, unknown>) => SocketLike;

/**
 * A socket factory for Node. With an `apiKey` it needs the `ws` package (the global
 * `WebSocket`, like a browser's, cannot set headers).
 */
export async function nodeSocketFactory(options: NodeSocketOptions = {}): Promise<SocketFactory> {
  const global = globalSocketFactory();
  if (global !== undefined && options.apiKey === undefined && options.preferWs !== true) return global;
  const name = "ws"; // a variable: bundlers for the browser must not try to resolve it
  const module = (await import(name)) as { WebSocket?: WsConstructor; default?: WsConstructor };
  const WebSocket = module.WebSocket ?? module.default;
  if (WebSocket === undefined) throw new Error("the ws package has no WebSocket export");
  if (options.apiKey !== undefined && !/^[\x21-\x7e]+$/.test(options.apiKey)) {
    throw new Error("api key holds characters a header cannot carry");
  }
  const headers = options.apiKey === undefined ? {} : { Authorization: `Bearer ${options.apiKey}` };
  // No compression (the server's default), no inbound size limit: the server bounds frames.
  return (url, protocols) => new WebSocket(url, protocols, { headers, perMessageDeflate: false, maxPayload: 0 });
}

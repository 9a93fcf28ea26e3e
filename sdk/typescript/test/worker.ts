/**
 * A real worker (`wsserver serve`) in a subprocess, a loopback TCP relay to cut or freeze
 * its connections, client tokens minted the way a backend mints them, and bounded polling.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file is sdk/typescript/build/test/worker.js once compiled). */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const WSSERVER = process.env["WSSERVER_BIN"] ?? join(ROOT, ".venv/bin/wsserver");

/** `wsserver serve --port 0` with API keys and client tokens, on 127.0.0.1. */
export class Worker {
  url = "";
  http = "";
  /** An API key of the backend principal: mints client tokens (a test plays the backend). */
  apiKey = "";
  readonly lines: string[] = [];
  private process: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), "wsserver-ts-"));

  async start(...flags: string[]): Promise<this> {
    const keys = join(this.dir, "keys.txt");
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("WSSERVER_")));
    this.apiKey = execFileSync(WSSERVER, ["keys", "new", "--principal", "backend", "--keys-file", keys], { env, encoding: "utf8" }).trim();
    const secret = join(this.dir, "client-token.secret");
    writeFileSync(secret, randomBytes(32).toString("base64"));
    const args = ["serve", "--host", "127.0.0.1", "--port", "0", "--api-keys-file", keys, "--client-token-secret-file", secret, ...flags];
    const child = spawn(WSSERVER, args, { env: { ...env, PYTHONUNBUFFERED: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    this.process = child;
    await new Promise<void>((resolveStart, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker did not start:\n${this.lines.join("")}`)), 30_000);
      const onData = (chunk: Buffer): void => {
        this.lines.push(chunk.toString());
        const match = /listening on (ws:\/\/\S+)/.exec(this.lines.join(""));
        if (match !== null && this.url === "") {
          this.url = match[1] as string;
          this.http = this.url.replace("ws://", "http://");
          clearTimeout(timer);
          resolveStart();
        }
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.on("exit", (code) => reject(new Error(`worker exited with ${code}:\n${this.lines.join("")}`)));
    });
    return this;
  }

  /** A client token, as a backend gets one for its browser (`POST /v1/client_tokens`). */
  async mintToken(query = "ttl_s=300&max_sessions=1"): Promise<string> {
    const response = await fetch(`${this.http}/v1/client_tokens?${query}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${this.apiKey}` },
    });
    if (response.status !== 201) throw new Error(`minting a client token: http ${response.status}`);
    const body = (await response.json()) as { token: string };
    return body.token;
  }

  async stop(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (child !== undefined && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A loopback TCP relay in front of the worker: cut its connections, or freeze them. */
export class Relay {
  url = "";
  private server: net.Server | undefined;
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private refusing = false;
  private readonly frozen: net.Socket[] = [];

  async start(target: string): Promise<this> {
    const { hostname, port } = new URL(target.replace("ws://", "http://"));
    this.server = net.createServer((client) => {
      if (this.refusing) return client.destroy();
      const upstream = net.connect(Number(port), hostname);
      const pair: [net.Socket, net.Socket] = [client, upstream];
      this.pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      const end = (): void => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on("close", end).on("error", end);
      upstream.on("close", end).on("error", end);
    });
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    const address = this.server.address() as net.AddressInfo;
    this.url = `ws://127.0.0.1:${address.port}/`;
    return this;
  }

  /** How many connections pass through now. */
  get connections(): number {
    return this.pairs.size;
  }

  /** Destroy every connection at once, both sides: a network cut (no close frame). */
  cut(): void {
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  /** Stop forwarding on the connections open now, keeping them open: a half-open link. */
  freeze(): void {
    for (const [client, upstream] of this.pairs) {
      upstream.unpipe(client);
      client.unpipe(upstream);
      upstream.pause();
      client.pause();
      this.frozen.push(client, upstream);
    }
    this.pairs.clear();
  }

  /** Refuse (or again accept) new connections. */
  refuse(on = true): void {
    this.refusing = on;
  }

  async stop(): Promise<void> {
    this.cut();
    for (const socket of this.frozen) socket.destroy();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}

/** Poll `condition` every 20 ms until it holds; fail after `timeoutMs` (never a timed assertion). */
export async function eventually(condition: () => boolean, timeoutMs = 20_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached in time`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A page's lifecycle and the network: what a browser tells a page that a socket cannot.
 *
 * - `online`: the network is back. A reconnect waiting out its backoff goes now (after a
 *   Wi-Fi → LTE handoff the user should not wait up to 5 s for nothing).
 * - `visibilitychange` to visible: a backgrounded tab's timers were throttled and its
 *   socket may have died unnoticed; the heartbeat watchdog checks the connection now.
 * - `offline` is only noted: the watchdog or the socket's close event decides the drop
 *   (an `offline` that lasts 100 ms must not cost a resume).
 * @packageDocumentation
 */

/** What lifecycle handling needs of a client (a `SessionClient`). */
export interface Wakeable {
  /** Retry a waiting reconnect now, and check the live connection's silence now. */
  wake(reason: "online" | "visible"): void;
}

/** The page (`window` and `document` in a browser; any event targets in tests). */
export interface PageTargets {
  readonly window: EventTarget;
  readonly document: EventTarget & { readonly visibilityState: string };
}

/** Wake `client` when the network comes back or the page becomes visible; returns the remover. */
export function watchPageLifecycle(client: Wakeable, page: PageTargets | undefined = browserPage()): () => void {
  if (page === undefined) return () => undefined;
  const online = (): void => client.wake("online");
  const visibility = (): void => {
    if (page.document.visibilityState === "visible") client.wake("visible");
  };
  page.window.addEventListener("online", online);
  page.document.addEventListener("visibilitychange", visibility);
  return () => {
    page.window.removeEventListener("online", online);
    page.document.removeEventListener("visibilitychange", visibility);
  };
}

function browserPage(): PageTargets | undefined {
  const scope = globalThis as { window?: EventTarget; document?: PageTargets["document"] };
  return scope.window !== undefined && scope.document !== undefined ? { window: scope.window, document: scope.document } : undefined;
}

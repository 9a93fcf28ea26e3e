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
/** Wake `client` when the network comes back or the page becomes visible; returns the remover. */
export function watchPageLifecycle(client, page = browserPage()) {
    if (page === undefined)
        return () => undefined;
    const online = () => client.wake("online");
    const visibility = () => {
        if (page.document.visibilityState === "visible")
            client.wake("visible");
    };
    page.window.addEventListener("online", online);
    page.document.addEventListener("visibilitychange", visibility);
    return () => {
        page.window.removeEventListener("online", online);
        page.document.removeEventListener("visibilitychange", visibility);
    };
}
function browserPage() {
    const scope = globalThis;
    return scope.window !== undefined && scope.document !== undefined ? { window: scope.window, document: scope.document } : undefined;
}

/**
 * Ending a session on the server while the client is between connections.
 *
 * A normal close (1000) ends a session at once, its running response included. A client
 * that closes while reconnecting has no connection to send it on; left alone, the server
 * would keep the session for its resume window and the response generating for its grace
 * period. So it connects once more, resumes, and closes that connection normally.
 * @packageDocumentation
 */
import { errorDisposition } from "./codes.js";
import { offeredProtocols, sessionUrl } from "./frames.js";
/** Resume on a fresh connection only to close it with 1000, trying `urls` in order, within the close timeout. */
export async function endOnServer(urls, point, options) {
    const deadline = performance.now() + options.closeTimeoutMs;
    for (const url of urls) {
        if (performance.now() >= deadline)
            return;
        if (await resumeAndEnd(url, point, options, deadline))
            return;
    }
}
/** Whether the server answered (ended the session, or has none to end). */
async function resumeAndEnd(url, point, options, deadline) {
    let protocols;
    try {
        protocols = await offeredProtocols(options.clientToken);
    }
    catch {
        return false;
    }
    const socket = options.socketFactory(sessionUrl(url, point.sessionId), protocols);
    return new Promise((resolve) => {
        const timer = setTimeout(() => {
            socket.close();
            resolve(false);
        }, Math.max(0, deadline - performance.now()));
        const settle = (answered) => {
            clearTimeout(timer);
            resolve(answered);
        };
        socket.addEventListener("open", () => {
            socket.send(JSON.stringify({ type: "session.resume", session_id: point.sessionId, resume_token: point.resumeToken, last_seq: point.lastSeq }));
        });
        socket.addEventListener("message", (event) => {
            if (typeof event.data !== "string")
                return;
            let message;
            try {
                message = JSON.parse(event.data);
            }
            catch {
                return;
            }
            if (message.type === "session.ready") {
                socket.close(1000, "client closed");
                settle(true);
            }
            else if (message.type === "error" && message.seq === undefined) {
                // Gone already (nothing left to end), or not this worker's to end now.
                socket.close(1000, "refused");
                settle(errorDisposition(message["code"]) === "terminal");
            }
        });
        socket.addEventListener("close", () => settle(false));
    });
}

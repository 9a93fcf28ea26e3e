/**
 * The SDK's errors: one tree, rooted at {@link ClientError}.
 * @packageDocumentation
 */
/** Base class of SDK errors. */
export class ClientError extends Error {
    name = "ClientError";
}
/** The session ended for good (terminal close code, failed resume, or `close()`). */
export class SessionClosed extends ClientError {
    name = "SessionClosed";
}
/** The server refused the credentials (HTTP 401/403 or an auth close code); never retried. */
export class AuthenticationError extends SessionClosed {
    name = "AuthenticationError";
}

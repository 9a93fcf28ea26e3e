/**
 * Close codes and error codes as data: what a client should do after each.
 *
 * A copy of `CLOSE_CODES` and the dispositions of `ERROR_CODES` in the server's
 * `protocol/codes.py` (the tables in docs/PROTOCOL.md, "Close codes" and "Error codes").
 * @packageDocumentation
 */
const CLOSE_TABLE = [
    [1000, "normal", "terminal"],
    [1001, "going_away", "resume"],
    [1002, "protocol_error", "terminal"],
    [1006, "abnormal", "resume"],
    [1007, "invalid_payload", "terminal"],
    [1008, "policy_violation", "terminal"],
    [1009, "message_too_big", "terminal"],
    [1011, "internal_error", "resume"],
    [1012, "service_restart", "resume"],
    [1013, "try_again_later", "resume"],
    [4000, "slow_consumer", "resume"],
    [4001, "handshake_timeout", "resume"],
    [4002, "session_replaced", "terminal"],
    [4003, "session_moved", "resume"],
    [4004, "session_closed", "terminal"],
    [4005, "flood", "terminal"],
    [4010, "rate_limited", "resume"],
    [4011, "connection_limit_reached", "resume"],
    [4401, "unauthorized", "terminal"],
    [4403, "forbidden", "terminal"],
];
/** Every close code the server documents, by number. */
export const CLOSE_CODES = new Map(CLOSE_TABLE.map(([code, name, disposition]) => [code, { code, name, disposition }]));
/** The code of a connection that ended without a closing handshake (never sent). */
export const ABNORMAL_CLOSE = 1006;
/**
 * What a client should do after the connection closed with `code`.
 *
 * `undefined` (no close frame at all) and unknown codes mean the transport failed, so
 * the client should resume; WebSocket-level protocol failures are the client's own bug.
 */
export function closeDisposition(code) {
    if (code === undefined)
        return "resume";
    const info = CLOSE_CODES.get(code);
    if (info !== undefined)
        return info.disposition;
    if (code === 1002 || code === 1003 || code === 1007 || code === 1010)
        return "terminal";
    return "resume";
}
/** Whether a close code refuses the connection's credentials (never retried). */
export function isAuthClose(code) {
    const name = code === undefined ? undefined : CLOSE_CODES.get(code)?.name;
    return name === "unauthorized" || name === "forbidden";
}
/** In-band error codes with disposition `resume`: the same request may succeed later. */
const RESUME_ERRORS = new Set([
    "store_unavailable",
    "audio_too_fast",
    "internal_error",
    "session_limit_reached",
    "too_many_failed_resumes",
]);
/** The disposition of an in-band error code; an unknown code counts as terminal. */
export function errorDisposition(code) {
    return typeof code === "string" && RESUME_ERRORS.has(code) ? "resume" : "terminal";
}
/** Error codes answering a resume that mean the session cannot go on. */
export const RESUME_FATAL = new Set([
    "unknown_session",
    "invalid_resume_token",
    "replay_unavailable",
    "invalid_seq",
]);

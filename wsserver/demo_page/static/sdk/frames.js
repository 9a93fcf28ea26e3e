/**
 * What one connection's handshake offers and how its frames decode: the encoding and
 * token subprotocols, the resume URL, JSON text frames and binary audio frames.
 * @packageDocumentation
 */
import { decodeAudioFrame, isAudioFrame, streamResponseId } from "./audio_frame.js";
import { binaryData, JSON_SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from "./transport.js";
/** A frame the SDK cannot use. */
export class FrameError extends Error {
    name = "FrameError";
}
/** A received frame as a server message: JSON text, or a binary audio frame. */
export function decodeFrame(data) {
    if (typeof data === "string") {
        const message = JSON.parse(data);
        if (message === null || typeof message !== "object" || Array.isArray(message) || typeof message.type !== "string") {
            throw new FrameError("a server message is not an object with a type");
        }
        return message;
    }
    const bytes = binaryData(data);
    if (bytes === undefined || !isAudioFrame(bytes))
        throw new FrameError("a binary frame that is not an audio frame");
    const frame = decodeAudioFrame(bytes);
    if (frame.kind !== 2)
        throw new FrameError("servers send audio frames of kind 2");
    // Copied: the application may keep it after the frame's buffer is reused.
    return { type: "response.audio.delta", seq: frame.seq, response_id: streamResponseId(frame.streamId), audio: frame.payload.slice() };
}
/** The URL to connect to; a resume names its session, so a router finds its owner. */
export function sessionUrl(url, sessionId) {
    if (sessionId === undefined)
        return url;
    return `${url}${url.includes("?") ? "&" : "?"}session_id=${encodeURIComponent(sessionId)}`;
}
/** The subprotocols to offer: the encoding, then the client token's entry (if any). */
export async function offeredProtocols(source) {
    const token = await resolveToken(source);
    return token === undefined ? [JSON_SUBPROTOCOL] : [JSON_SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX + token];
}
async function resolveToken(source) {
    if (source === undefined)
        return undefined;
    const token = typeof source === "string" ? source : await source();
    // A subprotocol entry holds RFC 7230 token characters only; anything else cannot be sent.
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(token))
        throw new Error("client token holds characters a subprotocol cannot carry");
    return token;
}

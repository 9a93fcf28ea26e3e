/**
 * The compact binary audio frame: a 16-byte little-endian header, then raw PCM16.
 *
 * ```text
 * offset size field
 * 0      1    kind       1 = audio in (client → server), 2 = audio out (server → client)
 * 1      1    flags      bit 0: last chunk; other bits 0
 * 2      2    reserved   0
 * 4      4    stream_id  u32: 0 on input; the response number on output (resp_7 → 7)
 * 8      8    seq        u64: input chunk number, or the event's session seq on output
 * 16     ...  payload    PCM16 mono little-endian samples (even length)
 * ```
 * The layout of the server's `protocol/audio_frame.py`.
 * @packageDocumentation
 */
/** Size of the header in bytes. */
export const AUDIO_HEADER_SIZE = 16;
/** `kind` of microphone audio sent by a client. */
export const AUDIO_IN = 1;
/** `kind` of a response's audio sent by the server. */
export const AUDIO_OUT = 2;
const FLAG_LAST = 0x01;
/** A frame that breaks the layout. */
export class AudioFrameError extends Error {
    name = "AudioFrameError";
}
/** Serialize one frame (header and payload). `seq` must be a safe integer ≥ 0. */
export function encodeAudioFrame(frame) {
    if (frame.payload.byteLength % 2 !== 0) {
        throw new AudioFrameError("audio payload is not whole pcm16 samples");
    }
    if (!Number.isSafeInteger(frame.seq) || frame.seq < 0) {
        throw new AudioFrameError(`audio frame seq ${frame.seq} is not a safe integer >= 0`);
    }
    if (!Number.isInteger(frame.streamId) || frame.streamId < 0 || frame.streamId > 0xffffffff) {
        throw new AudioFrameError(`audio frame stream id ${frame.streamId} is not a u32`);
    }
    const out = new Uint8Array(AUDIO_HEADER_SIZE + frame.payload.byteLength);
    const view = new DataView(out.buffer);
    view.setUint8(0, frame.kind);
    view.setUint8(1, frame.last ? FLAG_LAST : 0);
    view.setUint16(2, 0, true);
    view.setUint32(4, frame.streamId, true);
    view.setBigUint64(8, BigInt(frame.seq), true);
    out.set(frame.payload, AUDIO_HEADER_SIZE);
    return out;
}
/** Whether a binary frame is an audio frame (rather than a msgpack message). */
export function isAudioFrame(data) {
    return data.byteLength > 0 && (data[0] === AUDIO_IN || data[0] === AUDIO_OUT);
}
/** Parse an audio frame; throws {@link AudioFrameError} on a bad header or odd payload. */
export function decodeAudioFrame(data) {
    if (data.byteLength < AUDIO_HEADER_SIZE) {
        throw new AudioFrameError("audio frame shorter than its header");
    }
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const kind = view.getUint8(0);
    const flags = view.getUint8(1);
    if (kind !== AUDIO_IN && kind !== AUDIO_OUT) {
        throw new AudioFrameError(`unknown audio frame kind ${kind}`);
    }
    if (view.getUint16(2, true) !== 0 || (flags & ~FLAG_LAST) !== 0) {
        throw new AudioFrameError("audio frame reserved bits are set");
    }
    const seq = view.getBigUint64(8, true);
    if (seq > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new AudioFrameError("audio frame seq is beyond 2^53");
    }
    const payload = data.subarray(AUDIO_HEADER_SIZE);
    if (payload.byteLength % 2 !== 0) {
        throw new AudioFrameError("audio payload is not whole pcm16 samples");
    }
    return {
        kind,
        streamId: view.getUint32(4, true),
        seq: Number(seq),
        payload,
        last: (flags & FLAG_LAST) !== 0,
    };
}
/** The audio stream id of a response (`resp_7` → 7). */
export function responseStreamId(responseId) {
    const tail = responseId.slice(responseId.lastIndexOf("_") + 1);
    const id = Number.parseInt(tail, 10);
    if (!Number.isInteger(id) || String(id) !== tail) {
        throw new AudioFrameError(`response id ${responseId} has no number`);
    }
    return id;
}
/** Inverse of {@link responseStreamId}. */
export function streamResponseId(streamId) {
    return `resp_${streamId}`;
}

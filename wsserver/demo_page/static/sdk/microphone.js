/**
 * The client side of input audio: chunking, numbering and the resend window.
 *
 * The server takes chunks of 10 to 100 ms with increasing seq and ignores a seq it
 * already has, so the client numbers every chunk, keeps the last second of them, and
 * after a resume sends again those above the server's `audio_in_seq`.
 * @packageDocumentation
 */
import { AUDIO_IN, encodeAudioFrame } from "./audio_frame.js";
/** Longest chunk the server takes. */
export const MAX_CHUNK_MS = 100;
/** Shortest chunk the server takes. */
export const MIN_CHUNK_MS = 10;
/** Input audio kept for a resend after a reconnect (the server's real-time burst). */
export const RESEND_MS = 1000;
/** Turns PCM16 of any length into numbered audio frames. */
export class Microphone {
    sampleRate;
    /** The seq of the next chunk. */
    nextSeq = 0;
    bytesPerMs;
    tail = new Uint8Array(0);
    kept = [];
    keptMs = 0;
    /** @param sampleRate - the session's rate (16000 or 24000). */
    constructor(sampleRate) {
        this.sampleRate = sampleRate;
        this.bytesPerMs = (sampleRate * 2) / 1000;
    }
    /**
     * Frames for `pcm` (little-endian PCM16 bytes): chunks of at most 100 ms. Audio
     * shorter than 10 ms waits for the next call; `last` flushes it, padded with silence
     * to 10 ms, and flags the final chunk.
     */
    frames(pcm, last = false) {
        const data = concat(this.tail, pcm);
        const step = MAX_CHUNK_MS * this.bytesPerMs;
        const minimum = MIN_CHUNK_MS * this.bytesPerMs;
        const chunks = [];
        for (let i = 0; i < data.byteLength; i += step)
            chunks.push(data.subarray(i, i + step));
        this.tail = new Uint8Array(0);
        const final = chunks[chunks.length - 1];
        if (final !== undefined && final.byteLength < minimum) {
            if (last)
                chunks[chunks.length - 1] = concat(final, new Uint8Array(minimum - final.byteLength));
            else
                this.tail = Uint8Array.from(chunks.pop());
        }
        if (last && chunks.length === 0)
            chunks.push(new Uint8Array(minimum));
        return chunks.map((chunk, index) => this.frame(evenLength(chunk), last && index === chunks.length - 1));
    }
    /** Kept frames the server does not have (its last accepted seq given). */
    resendAfter(serverSeq) {
        return this.kept.filter((k) => k.seq > serverSeq).map((k) => k.frame);
    }
    frame(chunk, last) {
        const seq = this.nextSeq++;
        const frame = encodeAudioFrame({ kind: AUDIO_IN, streamId: 0, seq, payload: chunk, last });
        const ms = chunk.byteLength / this.bytesPerMs;
        this.kept.push({ seq, frame, ms });
        this.keptMs += ms;
        while (this.keptMs > RESEND_MS && this.kept.length > 1)
            this.keptMs -= this.kept.shift().ms;
        return frame;
    }
}
/** PCM16 from float samples in [-1, 1] (what a Web Audio graph produces), little-endian. */
export function floatToPcm16(samples) {
    const out = new Uint8Array(samples.length * 2);
    const view = new DataView(out.buffer);
    for (let i = 0; i < samples.length; i++) {
        const s = Math.max(-1, Math.min(1, samples[i]));
        view.setInt16(i * 2, s < 0 ? s * 0x8000 : s * 0x7fff, true);
    }
    return out;
}
function concat(a, b) {
    if (a.byteLength === 0)
        return b;
    const out = new Uint8Array(a.byteLength + b.byteLength);
    out.set(a);
    out.set(b, a.byteLength);
    return out;
}
function evenLength(chunk) {
    return chunk.byteLength % 2 === 0 ? chunk : concat(chunk, new Uint8Array(1));
}

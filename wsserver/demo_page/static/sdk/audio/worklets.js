/**
 * The AudioWorklet processors, as source text loaded from a Blob URL: a page needs no
 * build step and no extra file for them (a Content-Security-Policy must allow
 * `script-src blob:`; pass `processorUrl` to load them from a file of your own instead).
 *
 * Both are deliberately small: all the logic (resampling, framing, playback accounting)
 * runs on the main thread, where it is testable; the audio thread only moves samples.
 * @packageDocumentation
 */
/** Name of the capture processor. */
export const CAPTURE_PROCESSOR = "wsserver-capture";
/** Name of the playback processor. */
export const PLAYBACK_PROCESSOR = "wsserver-playback";
/**
 * Capture: posts the microphone's samples in batches of about 20 ms (one message per
 * 128-sample quantum would be 375 messages a second).
 */
const CAPTURE_SOURCE = `
class CaptureProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.batch = new Float32Array(Math.ceil(sampleRate / 50));
    this.filled = 0;
  }
  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (channel) {
      let i = 0;
      while (i < channel.length) {
        const n = Math.min(channel.length - i, this.batch.length - this.filled);
        this.batch.set(channel.subarray(i, i + n), this.filled);
        this.filled += n;
        i += n;
        if (this.filled === this.batch.length) {
          this.port.postMessage(this.batch.slice(0));
          this.filled = 0;
        }
      }
    }
    return true;
  }
}
registerProcessor(${JSON.stringify(CAPTURE_PROCESSOR)}, CaptureProcessor);
`;
/**
 * Playback: a queue of float chunks played in order; "flush" empties it at once
 * (barge-in). Every ~50 ms it posts how many samples it played since the last flush.
 */
const PLAYBACK_SOURCE = `
class PlaybackProcessor extends AudioWorkletProcessor {
  constructor() {
    super();
    this.queue = [];
    this.offset = 0;
    this.played = 0;
    this.sinceReport = 0;
    this.port.onmessage = (event) => {
      const message = event.data;
      if (message.type === "samples") this.queue.push(message.samples);
      else if (message.type === "flush") {
        // What was still to play: the proof that barge-in cut the answer short.
        const dropped = this.queue.reduce((sum, chunk) => sum + chunk.length, 0) - this.offset;
        this.queue = [];
        this.offset = 0;
        this.played = 0;
        this.port.postMessage({ type: "flushed", dropped });
      }
    };
  }
  process(inputs, outputs) {
    const out = outputs[0][0];
    let written = 0;
    while (written < out.length && this.queue.length > 0) {
      const head = this.queue[0];
      const n = Math.min(out.length - written, head.length - this.offset);
      out.set(head.subarray(this.offset, this.offset + n), written);
      written += n;
      this.offset += n;
      if (this.offset === head.length) {
        this.queue.shift();
        this.offset = 0;
      }
    }
    out.fill(0, written);
    for (let c = 1; c < outputs[0].length; c++) outputs[0][c].set(out);
    this.played += written;
    this.sinceReport += out.length;
    if (this.sinceReport >= sampleRate / 20 || (written > 0 && this.queue.length === 0)) {
      this.sinceReport = 0;
      this.port.postMessage({ type: "played", samples: this.played, idle: this.queue.length === 0 });
    }
    return true;
  }
}
registerProcessor(${JSON.stringify(PLAYBACK_PROCESSOR)}, PlaybackProcessor);
`;
/** Both processors in one module source. */
export const PROCESSORS_SOURCE = CAPTURE_SOURCE + PLAYBACK_SOURCE;
let blobUrl;
/** A Blob URL of {@link PROCESSORS_SOURCE} (made once per page). */
export function processorsUrl() {
    blobUrl ??= URL.createObjectURL(new Blob([PROCESSORS_SOURCE], { type: "text/javascript" }));
    return blobUrl;
}

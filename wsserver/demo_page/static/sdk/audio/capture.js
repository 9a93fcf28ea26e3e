/**
 * Microphone capture in a browser: `getUserMedia` (echo cancellation, noise suppression
 * and automatic gain requested) → an AudioWorklet → resampled to the session's rate →
 * PCM16 → the client's binary audio frames.
 * @packageDocumentation
 */
import { floatToPcm16 } from "../microphone.js";
import { Resampler } from "./resampler.js";
import { CAPTURE_PROCESSOR, processorsUrl } from "./worklets.js";
/** The audio constraints asked of `getUserMedia`: what a voice call wants. */
export function captureConstraints(deviceId) {
    return {
        channelCount: 1,
        echoCancellation: true,
        noiseSuppression: true,
        autoGainControl: true,
        ...(deviceId !== undefined && { deviceId: { exact: deviceId } }),
    };
}
/** Streams the microphone into a session while started; `muted` holds it back (push-to-talk). */
export class MicrophoneCapture {
    sink;
    options;
    /** While true, captured audio is dropped instead of sent. */
    muted = false;
    context;
    stream;
    node;
    resampler;
    constructor(sink, options) {
        this.sink = sink;
        this.options = options;
    }
    /** Ask for the microphone and start streaming (call from a user gesture). */
    async start() {
        if (this.context !== undefined)
            return;
        const stream = await navigator.mediaDevices.getUserMedia({ audio: captureConstraints(this.options.deviceId) });
        const context = new AudioContext();
        try {
            await context.audioWorklet.addModule(this.options.processorUrl ?? processorsUrl());
            const node = new AudioWorkletNode(context, CAPTURE_PROCESSOR, { numberOfInputs: 1, numberOfOutputs: 0 });
            const resampler = new Resampler(context.sampleRate, this.options.sampleRate);
            node.port.onmessage = (event) => {
                const samples = resampler.push(event.data);
                if (!this.muted && samples.length > 0)
                    this.sink.sendAudio(floatToPcm16(samples));
            };
            context.createMediaStreamSource(stream).connect(node);
            await context.resume();
            Object.assign(this, { context, stream, node, resampler });
        }
        catch (err) {
            for (const track of stream.getTracks())
                track.stop();
            await context.close();
            throw err;
        }
    }
    /** Whether the microphone is open. */
    get started() {
        return this.context !== undefined;
    }
    /** Release the microphone. */
    async stop() {
        const context = this.context;
        if (context === undefined)
            return;
        this.context = undefined;
        if (this.node !== undefined)
            this.node.port.onmessage = null;
        for (const track of this.stream?.getTracks() ?? [])
            track.stop();
        await context.close();
    }
}

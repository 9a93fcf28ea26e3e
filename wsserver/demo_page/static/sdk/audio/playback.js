/**
 * Playback of a response's audio in an AudioWorklet, with the reports barge-in needs.
 *
 * The worklet says how many samples it has played; {@link PlaybackTracker} (pure, tested
 * without a browser) turns that into played milliseconds per response, which
 * {@link AudioPlayback} reports with `reportPlayback`. On barge-in (the server detected
 * speech, or the response ended interrupted/cancelled) the queue is flushed at once, so
 * the user hears nothing the server will not keep.
 * @packageDocumentation
 */
import { pcm16ToFloat, Resampler } from "./resampler.js";
import { PLAYBACK_PROCESSOR, processorsUrl } from "./worklets.js";
/** Which response the queued samples belong to and how much of each was heard. */
export class PlaybackTracker {
    sampleRate;
    queued = [];
    playedTotal = 0;
    heard = new Map();
    constructor(sampleRate) {
        this.sampleRate = sampleRate;
    }
    /** `samples` of `responseId` went into the queue. */
    enqueue(responseId, samples) {
        const tail = this.queued[this.queued.length - 1];
        if (tail?.responseId === responseId)
            tail.samples += samples;
        else
            this.queued.push({ responseId, samples });
    }
    /** The worklet played `total` samples since the last flush; the responses that advanced. */
    played(total) {
        let advance = Math.max(0, total - this.playedTotal);
        this.playedTotal = Math.max(this.playedTotal, total);
        const touched = [];
        while (advance > 0 && this.queued.length > 0) {
            const head = this.queued[0];
            const n = Math.min(advance, head.samples);
            this.heard.set(head.responseId, (this.heard.get(head.responseId) ?? 0) + n);
            if (!touched.includes(head.responseId))
                touched.push(head.responseId);
            head.samples -= n;
            advance -= n;
            if (head.samples === 0)
                this.queued.shift();
        }
        return touched;
    }
    /** Milliseconds of `responseId` the user heard. */
    playedMs(responseId) {
        return ((this.heard.get(responseId) ?? 0) * 1000) / this.sampleRate;
    }
    /** The response playing now (the head of the queue), if any. */
    get current() {
        return this.queued[0]?.responseId;
    }
    /** Everything queued was dropped (barge-in): the worklet counts from zero again. */
    flushed() {
        this.queued.length = 0;
        this.playedTotal = 0;
    }
}
/** Plays every `response.audio.delta` of a client, reports what was heard, stops on barge-in. */
export class AudioPlayback {
    client;
    options;
    tracker;
    context;
    node;
    resampler;
    removers = [];
    /** Responses that were flushed: their late frames are not played. */
    stopped = new Set();
    /** Flushes the worklet has not confirmed: its counts in flight predate them. */
    unconfirmedFlushes = 0;
    constructor(client, options) {
        this.client = client;
        this.options = options;
        this.tracker = new PlaybackTracker(options.sampleRate);
    }
    /** Create the audio graph and start listening (call from a user gesture). */
    async start() {
        if (this.context !== undefined)
            return;
        const context = new AudioContext();
        await context.audioWorklet.addModule(this.options.processorUrl ?? processorsUrl());
        const node = new AudioWorkletNode(context, PLAYBACK_PROCESSOR, { numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [1] });
        node.connect(context.destination);
        const resampler = new Resampler(this.options.sampleRate, context.sampleRate);
        node.port.onmessage = (event) => {
            this.options.onReport?.(event.data);
            if (event.data.type === "flushed")
                this.unconfirmedFlushes -= 1;
            if (event.data.type !== "played" || this.unconfirmedFlushes > 0)
                return;
            // The worklet counts at the context's rate; the tracker at the session's.
            const total = Math.round((event.data.samples * this.options.sampleRate) / context.sampleRate);
            for (const id of this.tracker.played(total))
                void this.client.reportPlayback(id, this.tracker.playedMs(id)).catch(() => undefined);
        };
        Object.assign(this, { context, node, resampler });
        await context.resume();
        this.removers.push(this.client.on("response.audio.delta", (event) => this.enqueue(event.response_id, event.audio)), 
        // Barge-in: the server heard the user; what is queued will not be kept.
        this.client.on("*", (event) => {
            if (event.type === "input_audio.speech_started")
                this.flush();
        }), this.client.on("response.done", (event) => {
            if (event.status !== "completed")
                this.flush(event.response_id);
        }));
    }
    /** Queue PCM16 of a response. */
    enqueue(responseId, pcm) {
        if (this.node === undefined || this.resampler === undefined || this.stopped.has(responseId))
            return;
        const samples = pcm16ToFloat(pcm);
        this.tracker.enqueue(responseId, samples.length);
        this.node.port.postMessage({ type: "samples", samples: this.resampler.push(samples) });
    }
    /** Stop at once: drop everything queued (barge-in, interrupt). */
    flush(responseId) {
        const playing = responseId ?? this.tracker.current;
        if (playing !== undefined)
            this.stopped.add(playing);
        if (this.node !== undefined) {
            this.unconfirmedFlushes += 1;
            this.node.port.postMessage({ type: "flush" });
        }
        this.tracker.flushed();
    }
    /** Whether audio is queued or playing. */
    get playing() {
        return this.tracker.current !== undefined;
    }
    /** Tear the graph down. */
    async stop() {
        for (const remove of this.removers.splice(0))
            remove();
        const context = this.context;
        this.context = undefined;
        this.node = undefined;
        await context?.close();
    }
}

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

import type { SessionClient } from "../client.js";
import { pcm16ToFloat, Resampler } from "./resampler.js";
import { PLAYBACK_PROCESSOR, processorsUrl } from "./worklets.js";

/** What playback needs of a `SessionClient`. */
export type PlaybackSource = Pick<SessionClient, "on" | "reportPlayback">;

/** Which response the queued samples belong to and how much of each was heard. */
export class PlaybackTracker {
  private readonly queued: Array<{ responseId: string; samples: number }> = [];
  private playedTotal = 0;
  private readonly heard = new Map<string, number>();

  constructor(readonly sampleRate: number) {}

  /** `samples` of `responseId` went into the queue. */
  enqueue(responseId: string, samples: number): void {
    const tail = this.queued[this.queued.length - 1];
    if (tail?.responseId === responseId) tail.samples += samples;
    else this.queued.push({ responseId, samples });
  }

  /** The worklet played `total` samples since the last flush; the responses that advanced. */
  played(total: number): string[] {
    let advance = Math.max(0, total - this.playedTotal);
    this.playedTotal = Math.max(this.playedTotal, total);
    const touched: string[] = [];
    while (advance > 0 && this.queued.length > 0) {
      const head = this.queued[0] as { responseId: string; samples: number };
      const n = Math.min(advance, head.samples);
      this.heard.set(head.responseId, (this.heard.get(head.responseId) ?? 0) + n);
      if (!touched.includes(head.responseId)) touched.push(head.responseId);
      head.samples -= n;
      advance -= n;
      if (head.samples === 0) this.queued.shift();
    }
    return touched;
  }

  /** Milliseconds of `responseId` the user heard. */
  playedMs(responseId: string): number {
    return ((this.heard.get(responseId) ?? 0) * 1000) / this.sampleRate;
  }

  /** The response playing now (the head of the queue), if any. */
  get current(): string | undefined {
    return this.queued[0]?.responseId;
  }

  /** Everything queued was dropped (barge-in): the worklet counts from zero again. */
  flushed(): void {
    this.queued.length = 0;
    this.playedTotal = 0;
  }
}

/** Settings of an {@link AudioPlayback}. */
export interface PlaybackOptions {
  /** The session's sample rate. */
  readonly sampleRate: number;
  readonly processorUrl?: string;
  /** Called with each report of the worklet (counts at the audio context's rate). */
  readonly onReport?: (report: PlaybackReport) => void;
}

/** What the playback worklet reports: samples played since the last flush, or a flush and what it dropped. */
export type PlaybackReport =
  | { readonly type: "played"; readonly samples: number; readonly idle: boolean }
  | { readonly type: "flushed"; readonly dropped: number };

/** Plays every `response.audio.delta` of a client, reports what was heard, stops on barge-in. */
export class AudioPlayback {
  readonly tracker: PlaybackTracker;
  private context: AudioContext | undefined;
  private node: AudioWorkletNode | undefined;
  private resampler: Resampler | undefined;
  private readonly removers: Array<() => void> = [];
  /** Responses that were flushed: their late frames are not played. */
  private readonly stopped = new Set<string>();
  /** Flushes the worklet has not confirmed: its counts in flight predate them. */
  private unconfirmedFlushes = 0;

  constructor(
    private readonly client: PlaybackSource,
    private readonly options: PlaybackOptions,
  ) {
    this.tracker = new PlaybackTracker(options.sampleRate);
  }

  /** Create the audio graph and start listening (call from a user gesture). */
  async start(): Promise<void> {
    if (this.context !== undefined) return;
    const context = new AudioContext();
    await context.audioWorklet.addModule(this.options.processorUrl ?? processorsUrl());
    const node = new AudioWorkletNode(context, PLAYBACK_PROCESSOR, { numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [1] });
    node.connect(context.destination);
    const resampler = new Resampler(this.options.sampleRate, context.sampleRate);
    node.port.onmessage = (event: MessageEvent<PlaybackReport>) => {
      this.options.onReport?.(event.data);
      if (event.data.type === "flushed") this.unconfirmedFlushes -= 1;
      if (event.data.type !== "played" || this.unconfirmedFlushes > 0) return;
      // The worklet counts at the context's rate; the tracker at the session's.
      const total = Math.round((event.data.samples * this.options.sampleRate) / context.sampleRate);
      for (const id of this.tracker.played(total)) void this.client.reportPlayback(id, this.tracker.playedMs(id)).catch(() => undefined);
    };
    Object.assign(this, { context, node, resampler });
    await context.resume();
    this.removers.push(
      this.client.on("response.audio.delta", (event) => this.enqueue(event.response_id, event.audio)),
      // Barge-in: the server heard the user; what is queued will not be kept.
      this.client.on("*", (event) => {
        if (event.type === "input_audio.speech_started") this.flush();
      }),
      this.client.on("response.done", (event) => {
        if (event.status !== "completed") this.flush(event.response_id);
      }),
    );
  }

  /** Queue PCM16 of a response. */
  enqueue(responseId: string, pcm: Uint8Array): void {
    if (this.node === undefined || this.resampler === undefined || this.stopped.has(responseId)) return;
    const samples = pcm16ToFloat(pcm);
    this.tracker.enqueue(responseId, samples.length);
    this.node.port.postMessage({ type: "samples", samples: this.resampler.push(samples) });
  }

  /** Stop at once: drop everything queued (barge-in, interrupt). */
  flush(responseId?: string): void {
    const playing = responseId ?? this.tracker.current;
    if (playing !== undefined) this.stopped.add(playing);
    if (this.node !== undefined) {
      this.unconfirmedFlushes += 1;
      this.node.port.postMessage({ type: "flush" });
    }
    this.tracker.flushed();
  }

  /** Whether audio is queued or playing. */
  get playing(): boolean {
    return this.tracker.current !== undefined;
  }

  /** Tear the graph down. */
  async stop(): Promise<void> {
    for (const remove of this.removers.splice(0)) remove();
    const context = this.context;
    this.context = undefined;
    this.node = undefined;
    await context?.close();
  }
}

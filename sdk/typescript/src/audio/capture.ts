/**
 * Microphone capture in a browser: `getUserMedia` (echo cancellation, noise suppression
 * and automatic gain requested) → an AudioWorklet → resampled to the session's rate →
 * PCM16 → the client's binary audio frames.
 * @packageDocumentation
 */

import { floatToPcm16 } from "../microphone.js";
import { Resampler } from "./resampler.js";
import { CAPTURE_PROCESSOR, processorsUrl } from "./worklets.js";

/** Where captured audio goes (a `SessionClient`). */
export interface AudioSink {
  sendAudio(pcm: Uint8Array, last?: boolean): void;
}

/** Settings of a {@link MicrophoneCapture}. */
export interface CaptureOptions {
  /** The session's sample rate (16000 or 24000). */
  readonly sampleRate: number;
  /** The worklet module's URL (default: a Blob URL of the SDK's processors). */
  readonly processorUrl?: string;
  /** A device id from `enumerateDevices()`. */
  readonly deviceId?: string;
}

/** The audio constraints asked of `getUserMedia`: what a voice call wants. */
export function captureConstraints(deviceId?: string): MediaTrackConstraints {
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
  /** While true, captured audio is dropped instead of sent. */
  muted = false;
  private context: AudioContext | undefined;
  private stream: MediaStream | undefined;
  private node: AudioWorkletNode | undefined;
  private resampler: Resampler | undefined;

  constructor(
    private readonly sink: AudioSink,
    private readonly options: CaptureOptions,
  ) {}

  /** Ask for the microphone and start streaming (call from a user gesture). */
  async start(): Promise<void> {
    if (this.context !== undefined) return;
    const stream = await navigator.mediaDevices.getUserMedia({ audio: captureConstraints(this.options.deviceId) });
    const context = new AudioContext();
    try {
      await context.audioWorklet.addModule(this.options.processorUrl ?? processorsUrl());
      const node = new AudioWorkletNode(context, CAPTURE_PROCESSOR, { numberOfInputs: 1, numberOfOutputs: 0 });
      const resampler = new Resampler(context.sampleRate, this.options.sampleRate);
      node.port.onmessage = (event: MessageEvent<Float32Array>) => {
        const samples = resampler.push(event.data);
        if (!this.muted && samples.length > 0) this.sink.sendAudio(floatToPcm16(samples));
      };
      context.createMediaStreamSource(stream).connect(node);
      await context.resume();
      Object.assign(this, { context, stream, node, resampler });
    } catch (err) {
      for (const track of stream.getTracks()) track.stop();
      await context.close();
      throw err;
    }
  }

  /** Whether the microphone is open. */
  get started(): boolean {
    return this.context !== undefined;
  }

  /** Release the microphone. */
  async stop(): Promise<void> {
    const context = this.context;
    if (context === undefined) return;
    this.context = undefined;
    if (this.node !== undefined) this.node.port.onmessage = null;
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    await context.close();
  }
}

/**
 * Sample-rate conversion and sample formats between a Web Audio graph and the wire.
 *
 * A browser captures at its device rate (44.1 or 48 kHz, whatever `getUserMedia` gives),
 * the session speaks 16 or 24 kHz PCM16. Linear interpolation is enough for speech going
 * to a voice detector and a recognizer, and it streams: chunks of any length give the
 * same samples as one long buffer.
 * @packageDocumentation
 */

/** Streaming linear resampler of mono float samples. */
export class Resampler {
  private readonly step: number;
  /** Position of the next output sample, in input samples from the start of `previous`. */
  private position = 0;
  /** The last input sample of the previous chunk (the left neighbour of the next output). */
  private previous: number | undefined;

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {
    if (!(fromRate > 0 && toRate > 0)) throw new RangeError(`sample rates must be positive: ${fromRate} -> ${toRate}`);
    this.step = fromRate / toRate;
  }

  /** The output samples of one more input chunk. */
  push(input: Float32Array): Float32Array {
    if (this.fromRate === this.toRate) return input;
    // Samples indexed from the previous chunk's last one (index 0) when there is one.
    const offset = this.previous === undefined ? 0 : 1;
    const length = input.length + offset;
    const at = (i: number): number => (i < offset ? (this.previous as number) : (input[i - offset] as number));
    const out: number[] = [];
    while (this.position <= length - 1) {
      const left = Math.floor(this.position);
      const fraction = this.position - left;
      const a = at(left);
      out.push(fraction === 0 || left + 1 >= length ? a : a + (at(left + 1) - a) * fraction);
      this.position += this.step;
    }
    if (length > 0) {
      this.previous = at(length - 1);
      this.position -= length - 1;
    }
    return Float32Array.from(out);
  }
}

/** Float samples in [-1, 1] from little-endian PCM16 bytes (what the server sends). */
export function pcm16ToFloat(pcm: Uint8Array): Float32Array {
  const view = new DataView(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  const out = new Float32Array(pcm.byteLength >> 1);
  for (let i = 0; i < out.length; i++) out[i] = view.getInt16(i * 2, true) / 0x8000;
  return out;
}

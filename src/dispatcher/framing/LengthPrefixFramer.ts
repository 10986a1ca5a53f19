import type { WatchFramer } from './WatchFramer.ts';

const PREFIX_BYTES = 4;

/**
 * Length-prefixed frames, each a 4-byte big-endian length and that many bytes (kube-apiserver's
 * protobuf watch, `framer.NewLengthDelimitedFrameWriter`). The stream is walked frame by frame
 * without copying: only the bytes after the last complete frame are held.
 */
export class LengthPrefixFramer implements WatchFramer {
  /** Chunks (copied) since the last frame boundary. */
  #held: Buffer[] = [];
  /** Bytes of the current frame's length prefix read so far (0 at a boundary or inside a body). */
  #prefixRead = 0;
  #prefix = 0;
  /** Bytes of the current frame's body still to come. */
  #bodyLeft = 0;

  push(chunk: Buffer): Buffer | undefined {
    let boundary = -1;
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      if (this.#bodyLeft > 0) {
        const take = Math.min(this.#bodyLeft, n - i);
        this.#bodyLeft -= take;
        i += take;
        if (this.#bodyLeft === 0) boundary = i;
        continue;
      }
      this.#prefix = this.#prefix * 256 + chunk[i++]!;
      if (++this.#prefixRead < PREFIX_BYTES) continue;
      this.#bodyLeft = this.#prefix;
      this.#prefix = 0;
      this.#prefixRead = 0;
      if (this.#bodyLeft === 0) boundary = i;
    }
    if (boundary === -1) {
      if (n > 0) this.#held.push(Buffer.from(chunk));
      return undefined;
    }
    const done = boundary === n ? chunk : chunk.subarray(0, boundary);
    const out = this.#held.length === 0 ? done : Buffer.concat([...this.#held, done]);
    this.#held = boundary === n ? [] : [Buffer.from(chunk.subarray(boundary))];
    return out;
  }

  rest(): Buffer | undefined {
    const held = this.#held;
    this.#held = [];
    if (held.length === 0) return undefined;
    return held.length === 1 ? held[0] : Buffer.concat(held);
  }
}

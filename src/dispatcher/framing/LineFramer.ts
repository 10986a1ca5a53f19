import type { WatchFramer } from './WatchFramer.ts';

const NEWLINE = 10;

/** JSON watch events, one per line: passed on up to the last newline. */
export class LineFramer implements WatchFramer {
  /**
   * The chunks after the stream's last newline, not yet passed on. Kept as a list and joined once
   * when a newline arrives: joining on every chunk made one long line (a large CRD) quadratic.
   */
  #held: Buffer[] = [];

  push(chunk: Buffer): Buffer | undefined {
    // Only the new chunk is searched: the held ones hold no newline.
    const cut = chunk.lastIndexOf(NEWLINE);
    if (cut < 0) {
      // A chunk may be a view of memory its producer reuses: what is held is copied.
      this.#held.push(Buffer.from(chunk));
      return undefined;
    }
    const head = cut === chunk.length - 1 ? chunk : chunk.subarray(0, cut + 1);
    const out = this.#held.length === 0 ? head : Buffer.concat([...this.#held, head]);
    this.#held = cut === chunk.length - 1 ? [] : [Buffer.from(chunk.subarray(cut + 1))];
    return out;
  }

  rest(): Buffer | undefined {
    const held = this.#held;
    this.#held = [];
    if (held.length === 0) return undefined;
    return held.length === 1 ? held[0] : Buffer.concat(held);
  }
}

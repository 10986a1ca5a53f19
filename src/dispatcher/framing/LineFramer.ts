import type { WatchFramer } from './WatchFramer.ts';

const NEWLINE = 10;

/** JSON watch events, one per line: passed on up to the last newline. */
export class LineFramer implements WatchFramer {
  /** The part of the stream after its last newline, not yet passed on. */
  #tail: Buffer | undefined;

  push(chunk: Buffer): Buffer | undefined {
    const data = this.#tail ? Buffer.concat([this.#tail, chunk]) : chunk;
    const cut = data.lastIndexOf(NEWLINE);
    if (cut === data.length - 1) {
      this.#tail = undefined;
      return data;
    }
    if (cut < 0) {
      // A chunk may be a view of memory its producer reuses: what is held is copied.
      this.#tail = data === chunk ? Buffer.from(chunk) : data;
      return undefined;
    }
    this.#tail = Buffer.from(data.subarray(cut + 1));
    return data.subarray(0, cut + 1);
  }

  rest(): Buffer | undefined {
    const tail = this.#tail;
    this.#tail = undefined;
    return tail;
  }
}

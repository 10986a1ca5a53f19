import type { Endpoint } from './Endpoint.ts';
import type { Picker } from './Picker.ts';

/** Plain rotation over a fixed list. The cursor lives outside so a rebuilt picker keeps its place. */
export class RoundRobinPicker implements Picker {
  readonly #endpoints: readonly Endpoint[];
  readonly #cursor: { next: number };

  constructor(endpoints: readonly Endpoint[], cursor: { next: number }) {
    this.#endpoints = endpoints;
    this.#cursor = cursor;
  }

  pick(): Endpoint | undefined {
    const n = this.#endpoints.length;
    if (n === 0) return undefined;
    const i = this.#cursor.next % n;
    this.#cursor.next = i + 1;
    return this.#endpoints[i];
  }
}

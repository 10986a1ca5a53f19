import type { Writable } from 'node:stream';
import { CLIENT_KEYS, type Snapshot, type View } from './snapshot.ts';
import { seconds } from './seconds.ts';

/**
 * The view when the output is not a terminal (a pipe, a CI log): plain lines — each phase and event
 * as it happens, and the requests/s at every apiserver every `everyMs`.
 */
export class LineView implements View {
  readonly #out: Writable;
  readonly #everyMs: number;
  #phase = -1;
  #events = 0;
  #nextRatesAt = 0;
  #retries = 0;

  constructor(out: Writable, everyMs = 2000) {
    this.#out = out;
    this.#everyMs = everyMs;
  }

  update(s: Snapshot): void {
    const stamp = (ms: number): string => `[${seconds(ms).padStart(7)}]`;
    if (s.phase !== this.#phase) {
      this.#phase = s.phase;
      this.#line(`${stamp(s.phases[s.phase]!.atMs)} phase ${s.phase + 1}/${s.phases.length}: ${s.phases[s.phase]!.title}`);
    }
    for (const e of s.events.slice(this.#events)) this.#line(`${stamp(e.atMs)} ${e.text}`);
    this.#events = s.events.length;
    if (s.elapsedMs >= this.#nextRatesAt) {
      this.#nextRatesAt = s.elapsedMs + this.#everyMs;
      const rates = CLIENT_KEYS.map((k) => `${s.labels[k]}: ${s.rows.map((r) => `${r.name} ${Math.round(r.clients[k].rate)}`).join(', ')}`);
      const retries = s.retries - this.#retries;
      this.#retries = s.retries;
      this.#line(`${stamp(s.elapsedMs)} req/s  ${rates.join(' | ')}${retries ? `  (kube-balancer retried ${retries} elsewhere)` : ''}`);
    }
  }

  close(): void {}

  #line(text: string): void {
    this.#out.write(`${text}\n`);
  }
}

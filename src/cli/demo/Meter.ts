import { USERS, type Apiserver, type ClientKey } from './DemoCluster.ts';
import { CLIENT_KEYS } from './snapshot.ts';

/** The balancer's own health probes: not the workload, whoever's credentials they carry. */
const HEALTH = /^\/(?:readyz|livez|healthz)(?:[/?]|$)/;
const CLIENT_OF_USER = new Map(CLIENT_KEYS.map((c) => [USERS[c] as string, c]));

/**
 * Counts requests where they arrive: each apiserver's own request log, told apart by the user each
 * client authenticates as. Counts go into fixed time buckets from `startMs` (wall clock, as the log).
 */
export class Meter {
  readonly bucketMs: number;
  readonly startMs: number;
  readonly #apiservers: readonly Apiserver[];
  /** `[client][apiserver][bucket]` */
  readonly #counts: Record<ClientKey, number[][]>;
  readonly #lastId: number[];

  constructor(apiservers: readonly Apiserver[], startMs: number, bucketMs = 250) {
    this.#apiservers = apiservers;
    this.startMs = startMs;
    this.bucketMs = bucketMs;
    this.#counts = Object.fromEntries(CLIENT_KEYS.map((c) => [c, apiservers.map(() => [])])) as unknown as Record<ClientKey, number[][]>;
    this.#lastId = apiservers.map((a) => a.instance.requests.at(-1)?.id ?? 0);
  }

  /** Takes in what the logs got since the last call. Cheap: reads only new entries, from the end. */
  sample(): void {
    for (const [i, { instance }] of this.#apiservers.entries()) {
      const log = instance.requests;
      let k = log.length;
      while (k > 0 && log[k - 1]!.id > this.#lastId[i]!) k--;
      for (; k < log.length; k++) {
        const record = log[k]!;
        this.#lastId[i] = record.id;
        const client = CLIENT_OF_USER.get(record.user);
        if (!client || HEALTH.test(record.path)) continue;
        const bucket = Math.max(0, Math.floor((record.time - this.startMs) / this.bucketMs));
        const series = this.#counts[client][i]!;
        while (series.length <= bucket) series.push(0);
        series[bucket]!++;
      }
    }
  }

  /** Requests per second at each apiserver over the last whole second before `nowMs`. */
  rates(client: ClientKey, nowMs: number): number[] {
    const end = Math.floor((nowMs - this.startMs) / this.bucketMs);
    const span = Math.max(1, Math.round(1000 / this.bucketMs));
    return this.#counts[client].map((series) => this.#rate(series, end - span, span));
  }

  /** Requests each apiserver got from `client` in all, or from `fromMs` on. */
  totals(client: ClientKey, fromMs = 0): number[] {
    const first = Math.max(0, Math.floor(fromMs / this.bucketMs));
    return this.#counts[client].map((series) => series.slice(first).reduce((a, b) => a + b, 0));
  }

  /** Requests per second at each apiserver, averaged over consecutive windows of `windowMs` up to `untilMs`. */
  series(client: ClientKey, windowMs: number, untilMs: number): number[][] {
    const per = Math.max(1, Math.round(windowMs / this.bucketMs));
    const count = Math.ceil(untilMs / (per * this.bucketMs));
    return this.#counts[client].map((series) => Array.from({ length: count }, (_, w) => this.#rate(series, w * per, per)));
  }

  /** Requests per second in `buckets` buckets of `series` from bucket `from` (those before 0 count as none). */
  #rate(series: readonly number[], from: number, buckets: number): number {
    let sum = 0;
    for (let b = Math.max(0, from); b < from + buckets; b++) sum += series[b] ?? 0;
    return (sum * 1000) / (buckets * this.bucketMs);
  }
}

/** What the analysis reads of a run: per-second arrays, as `Meter` keeps them (and a worker sends them). */
export interface Series {
  seconds: number;
  servers: number;
  requests: Float64Array;
  watches: Float64Array;
  ready: Uint8Array;
  dns: Float64Array;
}

/** Request rates are compared over this many trailing seconds, so that Poisson noise does not pass for skew. */
export const RATE_WINDOW = 5;

/**
 * A wider window, for a second reading of the request settle time (`requestsSettleWideSeconds`):
 * at 2,000 clients (~200 requests a second per apiserver) a 5-s mean's max/min over three
 * apiservers still crosses 1.1 by chance every few minutes under any even split, round robin's
 * included, so the last such crossing, not the balancer, sets the 5-s settle time (issue 27,
 * docs/fleet.md). Over 10 s the noise is √2 smaller.
 */
export const WIDE_RATE_WINDOW = 10;

/** Per-second request rate of each apiserver: the trailing `window`-second mean. [second][server]. */
export function requestRates(meter: Series, window = RATE_WINDOW): number[][] {
  const { seconds, servers, requests } = meter;
  const rates: number[][] = [];
  for (let s = 0; s < seconds; s++) {
    const row: number[] = [];
    const from = Math.max(0, s - window + 1);
    for (let i = 0; i < servers; i++) {
      let sum = 0;
      for (let t = from; t <= s; t++) sum += requests[t * servers + i]!;
      row.push(sum / (s - from + 1));
    }
    rates.push(row);
  }
  return rates;
}

export function watchCounts(meter: Series): number[][] {
  const rows: number[][] = [];
  for (let s = 0; s < meter.seconds; s++) rows.push(Array.from(meter.watches.subarray(s * meter.servers, (s + 1) * meter.servers)));
  return rows;
}

/** max/min over the apiservers that are ready in that second (Infinity when one of them has none; NaN with fewer than two). */
export function maxMin(rows: number[][], meter: Series): number[] {
  return rows.map((row, s) => {
    let max = -Infinity;
    let min = Infinity;
    let n = 0;
    row.forEach((value, i) => {
      if (!meter.ready[s * meter.servers + i]) return;
      n++;
      max = Math.max(max, value);
      min = Math.min(min, value);
    });
    if (n < 2) return NaN;
    return min > 0 ? max / min : max > 0 ? Infinity : 1;
  });
}

/**
 * Seconds from `from` until `ratio` is at most `threshold` and stays there to the end of the run;
 * `null` when it never does.
 */
export function settleSeconds(ratio: readonly number[], from: number, threshold: number): number | null {
  let settledAt: number | null = null;
  for (let s = from; s < ratio.length; s++) {
    const r = ratio[s]!;
    if (r <= threshold) settledAt ??= s;
    else if (!Number.isNaN(r)) settledAt = null;
  }
  return settledAt === null ? null : settledAt - from;
}

/** max/min of the apiservers' mean values over the last `seconds` of the run. */
export function finalMaxMin(rows: number[][], seconds: number): number {
  const tail = rows.slice(-seconds);
  const n = tail[0]?.length ?? 0;
  const means = Array.from({ length: n }, (_, i) => tail.reduce((sum, row) => sum + row[i]!, 0) / tail.length);
  const max = Math.max(...means);
  const min = Math.min(...means);
  return min > 0 ? max / min : Infinity;
}

/** Peak and mean DNS queries per second over [from, end). */
export function dnsRates(meter: Series, from: number): { peak: number; mean: number } {
  const window = meter.dns.subarray(from);
  let peak = 0;
  let sum = 0;
  for (const q of window) {
    peak = Math.max(peak, q);
    sum += q;
  }
  return { peak, mean: window.length > 0 ? sum / window.length : 0 };
}

import { BalancerError } from '../errors.ts';
import type { TlsOptions } from '../net/tls.ts';
import type { BalancerOptions, BootstrapOptions, DnsOptions, ProbeOptions } from './BalancerOptions.ts';

// The keys of each option object, checked by the compiler against the types: a new option that is
// not listed here does not build, and one listed here that the type lacks does not either.
type Keys<T> = Record<keyof Required<T>, true>;

const top = {
  target: true, bootstrap: true, origin: true, tls: true, undici: true, connectTimeout: true, keepAliveTimeout: true,
  pingInterval: true, requestTimeout: true, maxAttempts: true, retryBudget: true, maxBufferedBody: true,
  consecutive5xx: true, baseEjectionMs: true, maxEjectionMs: true, maxEjectionPercent: true, probe: true, dns: true,
  clock: true, policy: true, slowStartMs: true, panicThreshold: true, logger: true, rebalanceWatches: true, maxEndpoints: true,
  maxHeldResponse: true, hedge: true,
} satisfies Keys<BalancerOptions>;
const tls = { ca: true, cert: true, key: true, servername: true, rejectUnauthorized: true, allowUnverifiedDiscovered: true } satisfies Keys<TlsOptions>;
const dns = { servers: true, timeout: true, attempts: true, minTtl: true, maxTtl: true, maxStale: true } satisfies Keys<DnsOptions>;
const probe = { path: true, intervalMs: true, timeoutMs: true, headers: true } satisfies Keys<ProbeOptions>;
const bootstrap = { server: true, headers: true, lastResort: true } satisfies Keys<BootstrapOptions>;
const retryBudget = { percent: true, min: true } satisfies Keys<NonNullable<BalancerOptions['retryBudget']>>;
const rebalanceWatches = { maxPerSecond: true, graceMs: true } satisfies Keys<Exclude<BalancerOptions['rebalanceWatches'], false | undefined>>;
const hedge = { minDelayMs: true, maxDelayMs: true, percentile: true } satisfies Keys<Exclude<BalancerOptions['hedge'], false | undefined>>;

/** The known keys of each nested option object, by its path (`''` is the options object itself). */
export const knownKeys: Readonly<Record<string, readonly string[]>> = {
  '': Object.keys(top),
  tls: Object.keys(tls),
  dns: Object.keys(dns),
  probe: Object.keys(probe),
  bootstrap: Object.keys(bootstrap),
  retryBudget: Object.keys(retryBudget),
  rebalanceWatches: Object.keys(rebalanceWatches),
  hedge: Object.keys(hedge),
};

/**
 * Throws for the first own key of `value` that `known` lacks, naming it and the nearest known key,
 * so `orign` or `tls.serverName` fails at construction instead of being ignored.
 */
export function rejectUnknownKeys(path: string, value: object, known: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const field = path === '' ? key : `${path}.${key}`;
    const nearest = nearestKey(key, known);
    const hint = nearest === undefined ? `known keys: ${known.join(', ')}` : `did you mean '${nearest}'?`;
    throw new BalancerError('ERR_INVALID_OPTION', `options.${field} is not an option (${hint})`);
  }
}

/**
 * The known key closest to `key` (case ignored), if it is close enough to be a likely misspelling.
 * The CLI's "did you mean" for commands and flags uses it too, so both guess alike.
 */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = damerauLevenshtein(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

/** Edits (insert, delete, substitute, swap two neighbours) between `a` and `b`: optimal string alignment. */
function damerauLevenshtein(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

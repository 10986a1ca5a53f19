import type { ApiserverMeter, RequestKind } from '../server/Apiserver.ts';

/** Latency buckets: 0.1 ms × 1.25^i. */
const BUCKETS = 96;
const BUCKET_BASE = 0.1;
const BUCKET_GROWTH = Math.log(1.25);

/**
 * Everything measured in one run, aggregated per simulated second (never per request): arrivals,
 * 429s and open watches per apiserver, DNS queries, and the application's view of its requests.
 */
export class Meter implements ApiserverMeter {
  readonly seconds: number;
  readonly servers: number;
  /**
   * Short API requests (GET, LIST, writes; not watches, which `watches` follows) that reached each
   * apiserver, per second: [second × servers + server].
   */
  readonly requests: Float64Array;
  /** 429s each apiserver sent (APF rejections), per second. */
  readonly rejections: Float64Array;
  /** Open watches on each apiserver, sampled at the end of each second. */
  readonly watches: Float64Array;
  /** Whether each apiserver was ready at the end of each second (1/0). */
  readonly ready: Uint8Array;
  /** Queries that reached the DNS server, per second. */
  readonly dns: Float64Array;
  /** Discovery's LISTs and WATCHes (a `kubernetes:` target's EndpointSlice reads) that reached each apiserver, per second. */
  readonly discoveryRequests: Float64Array;
  /** Open discovery watches on each apiserver, sampled at the end of each second. */
  readonly discoveryWatches: Float64Array;
  /** Watch events (slice changes, bookmarks) the apiservers sent to discovery watches. */
  discoveryEvents = 0;
  /** `/readyz` probes that reached an apiserver (kube-balancer's active health checks, the L4 balancer's). */
  probes = 0;
  /** Requests whose first answer to the application was an error, a 429 or a 5xx. */
  failed = 0;
  /** Requests that still failed after the client library's own retries (client-go's: Retry-After, GETs on connection errors). */
  finalFailed = 0;
  /** Retries by the client library (above the transport). */
  clientRetries = 0;
  /** LISTs an informer sent again because a watch answered 410 (its resourceVersion older than the apiserver's watch cache). */
  relists = 0;
  /** Completed requests by kind. */
  readonly completed: Record<RequestKind, number> = { get: 0, list: 0, write: 0, watch: 0 };
  /** For each apiserver that became ready during the run: how long (ms) each client took to list it. */
  readonly discovery = new Map<number, number[]>();
  readonly #latency = new Float64Array(BUCKETS);
  readonly #now: () => number;

  constructor(seconds: number, servers: number, now: () => number) {
    this.seconds = seconds;
    this.servers = servers;
    this.requests = new Float64Array(seconds * servers);
    this.rejections = new Float64Array(seconds * servers);
    this.watches = new Float64Array(seconds * servers);
    this.ready = new Uint8Array(seconds * servers);
    this.dns = new Float64Array(seconds);
    this.discoveryRequests = new Float64Array(seconds * servers);
    this.discoveryWatches = new Float64Array(seconds * servers);
    this.#now = now;
  }

  #second(): number {
    const s = Math.floor(this.#now() / 1000);
    return s < this.seconds ? s : this.seconds - 1;
  }

  /** Watch requests that reached an apiserver (each open, re-watch and move counts one). */
  watchRequests = 0;

  arrived(server: number, kind: RequestKind, discovery?: boolean): void {
    if (discovery) this.discoveryRequests[this.#second() * this.servers + server]!++;
    else if (kind === 'watch') this.watchRequests++;
    else this.requests[this.#second() * this.servers + server]!++;
  }

  rejected(server: number): void {
    this.rejections[this.#second() * this.servers + server]!++;
  }

  discoveryEvent(): void {
    this.discoveryEvents++;
  }

  probed(): void {
    this.probes++;
  }

  /** Short requests that reached an apiserver after its SIGTERM (sent before the client saw the drain). */
  sigtermArrivals = 0;

  afterSigterm(): void {
    this.sigtermArrivals++;
  }

  /**
   * For each client and each SIGTERM: ms from the SIGTERM until the client's health tracker drained
   * (or ejected) that endpoint — how soon a drain is seen, by a failing `/readyz` or a shutdown answer.
   */
  readonly drainSeen: number[] = [];

  dnsQuery(): void {
    this.dns[this.#second()]!++;
  }

  sample(second: number, server: number, watches: number, ready: boolean, discoveryWatches = 0): void {
    if (second >= this.seconds) return;
    this.watches[second * this.servers + server] = watches;
    this.discoveryWatches[second * this.servers + server] = discoveryWatches;
    this.ready[second * this.servers + server] = ready ? 1 : 0;
  }

  /** A short request's answer reached the application after `ms`. */
  latency(ms: number): void {
    const i = ms <= BUCKET_BASE ? 0 : Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / BUCKET_BASE) / BUCKET_GROWTH));
    this.#latency[i]!++;
  }

  /** The `q` quantile of short-request latency, ms (a bucket's upper bound). */
  latencyQuantile(q: number): number {
    let total = 0;
    for (const n of this.#latency) total += n;
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.#latency[i]!;
      if (seen >= q * total && seen > 0) return BUCKET_BASE * Math.exp(i * BUCKET_GROWTH);
    }
    return 0;
  }
}

import type { Endpoint } from '../balancer/Endpoint.ts';
import type { Clock, ClockTimer } from '../clock.ts';
import type { HeadersSource } from '../net/headers.ts';
import type { ProbeResult } from './HealthTracker.ts';

export interface ProbeSettings {
  /** Path requested on every endpoint; `/readyz` fails as soon as an apiserver starts shutting down. */
  path: string;
  intervalMs: number;
  timeoutMs: number;
  /** Extra headers, e.g. `authorization` where anonymous access to /readyz is off (or a function giving them). */
  headers: HeadersSource;
}

/** Sends one probe to one endpoint; `undefined` when it cannot yet (no origin known to probe for). */
export type SendProbe = (endpoint: Endpoint, settings: ProbeSettings) => Promise<ProbeResult | undefined>;

/**
 * A ready endpoint that answered a request successfully within the last interval skips its probe
 * (passive health is fresh), but at most this many times in a row: `/readyz` is the one early sign
 * of a shutdown — it fails for the whole `--shutdown-delay-duration` while requests still succeed —
 * so even a busy endpoint's is read every few intervals (10 s at the default 2 s, the interval of
 * OpenShift's load-balancer health check).
 */
const MAX_SKIPS = 4;

/**
 * Active health: every endpoint is probed on its own jittered timer (so a fleet of clients does not
 * probe in step), one probe at a time per endpoint. Probes that would only repeat what requests
 * just showed are skipped (`MAX_SKIPS`): with thousands of clients, probes are most of the requests
 * an apiserver gets (`npm run fleet`). Ejected, draining, probing and idle endpoints are always probed.
 */
export class Prober {
  readonly #settings: ProbeSettings;
  readonly #clock: Clock;
  readonly #send: SendProbe;
  readonly #onResult: (endpoint: Endpoint, result: ProbeResult) => void;
  readonly #timers = new Map<Endpoint, ClockTimer>();
  /** Probes skipped in a row, per endpoint. */
  readonly #skipped = new Map<Endpoint, number>();
  readonly #random: () => number;
  #closed = false;

  constructor(settings: ProbeSettings, clock: Clock, send: SendProbe, onResult: (endpoint: Endpoint, result: ProbeResult) => void, random = Math.random) {
    this.#settings = settings;
    this.#clock = clock;
    this.#send = send;
    this.#onResult = onResult;
    this.#random = random;
  }

  /** Starts probing an endpoint; the first probe comes within one interval, spread at random. */
  add(endpoint: Endpoint): void {
    if (this.#closed || this.#timers.has(endpoint)) return;
    this.#schedule(endpoint, this.#settings.intervalMs * this.#random());
  }

  remove(endpoint: Endpoint): void {
    const timer = this.#timers.get(endpoint);
    if (timer !== undefined) this.#clock.clearTimeout(timer);
    this.#timers.delete(endpoint);
    this.#skipped.delete(endpoint);
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#timers.values()) this.#clock.clearTimeout(timer);
    this.#timers.clear();
    this.#skipped.clear();
  }

  #schedule(endpoint: Endpoint, ms: number): void {
    this.#timers.set(
      endpoint,
      this.#clock.setTimeout(() => this.#due(endpoint), ms),
    );
  }

  #due(endpoint: Endpoint): void {
    const skipped = this.#skipped.get(endpoint) ?? 0;
    const fresh = endpoint.state === 'ready' && this.#clock.now() - endpoint.lastSuccessAt < this.#settings.intervalMs;
    if (fresh && skipped < MAX_SKIPS) {
      this.#skipped.set(endpoint, skipped + 1);
      this.#next(endpoint);
      return;
    }
    this.#skipped.delete(endpoint);
    void this.#probe(endpoint);
  }

  #next(endpoint: Endpoint): void {
    this.#schedule(endpoint, this.#settings.intervalMs * (0.8 + 0.4 * this.#random()));
  }

  async #probe(endpoint: Endpoint): Promise<void> {
    let result: ProbeResult | undefined;
    try {
      result = await this.#send(endpoint, this.#settings);
    } catch {
      result = 'fail';
    }
    // The endpoint may have been removed, or the balancer closed, while the probe ran.
    if (this.#closed || !this.#timers.has(endpoint)) return;
    if (result !== undefined) this.#onResult(endpoint, result);
    this.#next(endpoint);
  }
}

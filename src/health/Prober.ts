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
 * Active health: every endpoint is probed on its own jittered timer (so a fleet of clients does not
 * probe in step), one probe at a time per endpoint.
 */
export class Prober {
  readonly #settings: ProbeSettings;
  readonly #clock: Clock;
  readonly #send: SendProbe;
  readonly #onResult: (endpoint: Endpoint, result: ProbeResult) => void;
  readonly #timers = new Map<Endpoint, ClockTimer>();
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
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#timers.values()) this.#clock.clearTimeout(timer);
    this.#timers.clear();
  }

  #schedule(endpoint: Endpoint, ms: number): void {
    this.#timers.set(
      endpoint,
      this.#clock.setTimeout(() => void this.#probe(endpoint), ms),
    );
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
    this.#schedule(endpoint, this.#settings.intervalMs * (0.8 + 0.4 * this.#random()));
  }
}

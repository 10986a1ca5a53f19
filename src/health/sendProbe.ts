import type { Dispatcher } from 'undici';
import type { Endpoint } from '../balancer/Endpoint.ts';
import type { Clock } from '../clock.ts';
import { classifyError } from './classifyError.ts';
import type { ProbeResult } from './HealthTracker.ts';
import type { OutcomeJudge } from './OutcomeJudge.ts';
import type { ProbeSettings } from './Prober.ts';

/** undici reads `servername` per request, though its types do not list it. */
export type ProbeRequest = Dispatcher.RequestOptions & { servername?: string };

/** What a probe is sent on: one endpoint's pool (any dispatcher with undici's `request`). */
export interface ProbeDispatcher {
  request(options: ProbeRequest): Promise<{ statusCode: number; body: { dump(): Promise<unknown> } }>;
}

/** Where one probe goes: the pool of the endpoint, for `origin` (its `Host`), with `sni` when the name is not an IP. */
export interface ProbeTarget {
  origin: URL;
  sni: string | undefined;
  pool: ProbeDispatcher;
}

/**
 * Sends one probe on one endpoint's pool and reads its answer as a verdict; `undefined` when it
 * proves nothing (no credentials this time, the endpoint or balancer gone meanwhile, a timeout our
 * own stall explains).
 */
export class ProbeSender {
  readonly #judge: Pick<OutcomeJudge, 'conclusiveTimeout' | 'silentConnect'>;
  readonly #clock: Clock;
  readonly #warn: (message: string) => void;
  readonly #closed: () => boolean;
  #warnedAuth = false;

  constructor(judge: Pick<OutcomeJudge, 'conclusiveTimeout' | 'silentConnect'>, clock: Clock, warn: (message: string) => void, closed: () => boolean) {
    this.#judge = judge;
    this.#clock = clock;
    this.#warn = warn;
    this.#closed = closed;
  }

  /**
   * `target` is looked up only once the headers are read: reading them (a kubeconfig's exec plugin)
   * may rotate the credentials, which closes the pools open before, and a probe sent on one of
   * those would fail as if the endpoint were unreachable (seen on a busy machine: all three ejected).
   */
  async send(endpoint: Endpoint, settings: ProbeSettings, target: () => ProbeTarget): Promise<ProbeResult | undefined> {
    let headers: Record<string, string>;
    try {
      headers = typeof settings.headers === 'function' ? await settings.headers() : settings.headers;
    } catch (error) {
      // No credentials this time (an exec plugin failed): no verdict on the endpoint either.
      this.#warn(`probe headers: ${(error as Error).message}`);
      return undefined;
    }
    if (endpoint.removed || this.#closed()) return undefined;
    const { origin, sni, pool } = target();
    try {
      const res = await pool.request({
        path: settings.path,
        method: 'GET',
        headers: { ...headers, host: origin.host },
        headersTimeout: settings.timeoutMs,
        bodyTimeout: settings.timeoutMs,
        ...(sni ? { servername: sni } : {}),
      });
      await res.body.dump();
      endpoint.lastAnswerAt = this.#clock.now();
      if (res.statusCode === 401 || res.statusCode === 403) {
        // The apiserver answers but will not say whether it is ready: count that as alive.
        if (!this.#warnedAuth) {
          this.#warnedAuth = true;
          this.#warn(`probe ${settings.path} answered ${res.statusCode}: set probe.headers (authorization) so readiness can be read`);
        }
        return 'pass';
      }
      return res.statusCode >= 200 && res.statusCode < 400 ? 'pass' : 'fail';
    } catch (error) {
      const kind = classifyError(error);
      if ((kind === 'timeout' || kind === 'unresponsive') && !this.#judge.conclusiveTimeout(endpoint, settings.timeoutMs, settings.timeoutMs)) return undefined;
      const silentConnect = this.#judge.silentConnect(endpoint, kind, error as Error);
      if (silentConnect !== undefined) return silentConnect ? 'unreachable' : undefined;
      if (kind === 'connect' || kind === 'tls') return kind;
      // Connected but no answer in time: a black hole, or not talking.
      return 'unreachable';
    }
  }
}

import type { EndpointAddress } from '../resolver/Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';
import { FALL_MS, LatencyEstimate, RELATIVE_MEDIAN_OF } from './load/LatencyEstimate.ts';

/**
 * Why an endpoint stopped taking requests: a failed connection or handshake, consecutive failures
 * (5xx, broken connections, request timeouts), a 429 from API Priority and Fairness, a probe that
 * got no answer (black hole), or a failing probe while coming back.
 */
export type EjectReason = 'connect' | 'tls' | 'failures' | 'throttled' | 'unreachable' | 'probe';

/**
 * - `ready`: takes new requests.
 * - `ejected`: failed; no new requests until its ejection ends.
 * - `draining`: its apiserver is shutting down or failing /readyz; in-flight requests finish.
 * - `probing`: coming back; exactly one probation request decides.
 */
export type EndpointState = 'ready' | 'ejected' | 'draining' | 'probing';

/** A snapshot of one endpoint, as `balancer.endpoints()` reports it. */
export interface EndpointInfo {
  address: string;
  port: number;
  weight: number;
  priority: number;
  state: EndpointState;
  /** Requests dispatched to this endpoint that have not finished. */
  inFlight: number;
  /** Open long-running requests (watches, `follow=true` logs, exec/attach/port-forward). */
  streams: number;
  /** Requests dispatched to this endpoint since it joined. */
  requests: number;
  /** Requests that ended in a transport error or a 5xx at this endpoint. */
  failures: number;
  /** `address:port` (IPv6 in brackets): the endpoint's identity, and its `endpoint` label in metrics. */
  key: string;
  /** Health's multiplier on `weight`, in (0, 1]: below 1 after 429s from API Priority and Fairness. */
  weightFactor: number;
  /**
   * The `'weighted-round-robin'` policy's multiplier on `weight`, in (0, 1]: below 1 while this
   * endpoint answers slower than the fastest one (or stopped answering). Always 1 under other policies.
   */
  loadFactor: number;
  /** Moving average of the time (ms) short GETs of one object took here; `null` before the first. */
  latencyMs: number | null;
  /**
   * How the attempts sent here ended: by HTTP status class, `error` (no response: connection,
   * TLS, reset, timeout) and `aborted` (the caller gave up). With `inFlight`, they add up to `requests`.
   */
  responses: Record<ResponseClass, number>;
  /** Times it was ejected since it joined. */
  ejections: number;
  /** The latest ejection: why, when (epoch ms) and for how long; `null` if never ejected. */
  lastEjection: { reason: EjectReason; at: number; durationMs: number } | null;
  /** What the resolver said of it, when it said: `source` (e.g. `dns+srv`) and record `ttl` in seconds. */
  source?: string;
  ttl?: number;
}

export type ResponseClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'error' | 'aborted';

/** Indexes of `Endpoint.outcomes`: 1–5 are status classes, so a response is counted at `status / 100`. */
export const OUTCOME_ERROR = 0;
export const OUTCOME_ABORTED = 6;

/**
 * Out because its connections were refused: it sheds no load and may have restarted unseen, and a
 * refused connection sends nothing, so a retry with nowhere else to go may still try it (`Candidates`).
 */
export function outForRefusals(endpoint: Endpoint): boolean {
  return endpoint.state === 'ejected' && endpoint.lastEjection?.reason === 'connect';
}

/** The live state of one apiserver endpoint. Survives endpoint-set updates while it is listed. */
export class Endpoint {
  // The fields every probe tick reads come first, so that they share the object's first cache line:
  // with thousands of simulated clients that read was most of the Prober's time (`npm run fleet`).
  state: EndpointState = 'ready';
  inFlight = 0;
  streams = 0;
  /**
   * The endpoint's one progress clock: clock time (ms) it last sent anything, response headers, a
   * piece of a body (watch events included), a probe's answer. Every silence test reads it (hedging,
   * probe timeouts, the stall watch, the probe skip): an endpoint delivering bytes is not silent,
   * whichever request they belong to.
   */
  lastAnswerAt = -Infinity;
  readonly key: string;
  readonly address: string;
  readonly port: number;
  weight = 1;
  priority = 0;
  /**
   * Clock time (ms) it last became ready, by joining or by coming back; slow start ramps from here.
   * −Infinity for the endpoints of the balancer's first set, which have nothing to be protected from.
   */
  readySince: number;
  /**
   * Multiplier on `weight` set by health (e.g. lowered after 429s from API Priority and Fairness),
   * in (0, 1]. The picker uses `weight × weightFactor` (× the slow-start ramp) as the endpoint's share.
   */
  weightFactor = 1;
  /**
   * Multiplier on `weight` from observed load (`'weighted-round-robin'`), in (0, 1]; set by
   * `reweigh` from `latency`, read by the picker like `weightFactor`.
   */
  loadFactor = 1;
  /**
   * Its latest answers took 2.5 times the fastest endpoint's or more (`LAG_RATIO`), before
   * `loadFactor` relaxes with their age (`reweigh`): a pick here now is the trickle that tells when
   * it is fast again, and with hedging on it is measured by a copy while the caller's request goes
   * elsewhere (`dispatcher/Explore.ts`); not picked for a while, it gets a copy of some other
   * request's GET all the same (`load/remeasure.ts`).
   */
  lagging = false;
  /** Clock time (ms) it last turned `lagging`: re-measures of it are paced by how long it has lagged (`load/remeasure.ts`). */
  laggingSince = -Infinity;
  /** Latency and in-flight count of the short GETs of one object sent here. */
  readonly latency = new LatencyEstimate();
  /**
   * The same of every other short request sent here (LISTs, writes, discovery), each answer's
   * latency put on one scale with its class's (`load/ClassCosts.ts`): the weights' evidence where
   * there is no GET of one object to judge by.
   */
  readonly relative = new LatencyEstimate(FALL_MS, RELATIVE_MEDIAN_OF);
  /** Set once the resolver stops listing it: no new requests, in-flight ones finish. */
  removed = false;
  /**
   * Set by health while the endpoint is out because it refused or never answered a connection (not
   * for a mere 5xx or 429): panic mode, which distrusts health, still does not send traffic there.
   */
  unreachable = false;
  requests = 0;
  failures = 0;
  /** Attempt outcomes, indexed by `OUTCOME_ERROR`, status class (1–5), `OUTCOME_ABORTED`: one typed-array increment per attempt. */
  readonly outcomes = new Float64Array(7);
  ejections = 0;
  lastEjection: EndpointInfo['lastEjection'] = null;
  source: string | undefined;
  ttl: number | undefined;

  constructor(address: EndpointAddress, now: number, key = endpointKey(address)) {
    this.readySince = now;
    this.key = key;
    this.address = address.address;
    this.port = address.port;
    this.relisted(address);
  }

  /** What the resolver says of it now (a new listing of the same address and port). */
  relisted(address: EndpointAddress): void {
    this.weight = address.weight ?? 1;
    this.priority = address.priority ?? 0;
    this.source = address.source;
    this.ttl = address.ttl;
  }

  /** `https://10.0.0.1:6443` / `https://[fd00::1]:6443`. */
  origin(protocol: string): string {
    return `${protocol}//${this.key}`;
  }

  info(): EndpointInfo {
    return {
      address: this.address,
      port: this.port,
      weight: this.weight,
      priority: this.priority,
      state: this.state,
      inFlight: this.inFlight,
      streams: this.streams,
      requests: this.requests,
      failures: this.failures,
      key: this.key,
      weightFactor: this.weightFactor,
      loadFactor: this.loadFactor,
      latencyMs: this.latency.value === this.latency.value ? Math.round(this.latency.value * 100) / 100 : null,
      responses: {
        '1xx': this.outcomes[1]!,
        '2xx': this.outcomes[2]!,
        '3xx': this.outcomes[3]!,
        '4xx': this.outcomes[4]!,
        '5xx': this.outcomes[5]!,
        error: this.outcomes[OUTCOME_ERROR]!,
        aborted: this.outcomes[OUTCOME_ABORTED]!,
      },
      ejections: this.ejections,
      lastEjection: this.lastEjection && { ...this.lastEjection },
      ...(this.source !== undefined ? { source: this.source } : {}),
      ...(this.ttl !== undefined ? { ttl: this.ttl } : {}),
    };
  }
}

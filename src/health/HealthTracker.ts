import type { EjectReason, Endpoint, EndpointState } from '../balancer/Endpoint.ts';
import type { Clock, ClockTimer } from '../clock.ts';

export interface HealthSettings {
  /** Consecutive 5xx (or request timeouts) that eject an endpoint. */
  consecutive5xx: number;
  /** First ejection length; doubles with each ejection in a row. */
  baseEjectionMs: number;
  maxEjectionMs: number;
  /**
   * Ejections on inferred evidence (silence, probe timeouts, runs of 5xx) never take out more than
   * this share of the endpoints, nor the last one taking requests.
   */
  maxEjectionPercent: number;
  /** Active probes run: a draining endpoint then comes back only through passing probes. */
  probes: boolean;
}

/**
 * How an endpoint came back: its probation request, a probe, the end of its 429's Retry-After, or
 * (in panic) an answer to a request sent after that 429.
 */
export type RestoreVia = 'probation' | 'probe' | 'retry-after' | 'answer';

export interface HealthListener {
  /** Eligibility or weights changed: the picker must be rebuilt. */
  changed(): void;
  eject(endpoint: Endpoint, reason: EjectReason, durationMs: number): void;
  drain(endpoint: Endpoint, reason: 'probe' | 'shutdown'): void;
  restore(endpoint: Endpoint, via: RestoreVia): void;
}

/**
 * `pass`/`fail`: the endpoint answered ready or not ready. `connect`/`tls`: no connection could be
 * made. `unreachable`: no answer in time on a connection (a black hole).
 */
export type ProbeResult = 'pass' | 'fail' | 'connect' | 'tls' | 'unreachable';

interface Health {
  consecutiveFailures: number;
  /** Ejections in a row, for the exponential backoff. */
  ejections: number;
  lastEjectedAt: number;
  reason: EjectReason | undefined;
  timer: ClockTimer | undefined;
  probationInFlight: boolean;
  probePasses: number;
  /** Clock time it entered its state: a probe sent before says nothing of it. */
  since: number;
}

/** Passing probes that bring a draining endpoint back (rise), like a readiness probe's successThreshold. */
const PROBES_TO_RETURN = 2;
/** 429s halve an endpoint's share down to this floor; each success gives back this much. */
const MIN_WEIGHT_FACTOR = 0.1;
const WEIGHT_RECOVERY_STEP = 0.05;
/**
 * While shares recover, the picker is rebuilt at most this often (and once a share is whole): each
 * success moves the factor, but a rebuild per success would cost more than the traffic it steers.
 */
const RECOVERY_REBUILD_MS = 100;
/** Without a Retry-After, a throttled endpoint rests this long. */
const DEFAULT_THROTTLE_MS = 1_000;

/**
 * The health state machine of every endpoint: passive signals from request outcomes, active probe
 * results, ejection with jittered exponential backoff, one probation request to come back, and
 * draining. It owns `endpoint.state` and `endpoint.weightFactor`; the picker only reads them. An
 * endpoint that comes back slow-starts, its latency estimate started over.
 *
 *   ready ──connect/TLS failure, N×5xx──► ejected ──timer──► probing ──probation ok──► ready
 *     │  ╲──429 (APF)──► ejected(throttled) ──Retry-After (in panic: an answer)──► ready   └──fails──► ejected (longer)
 *     └──failing probe (any state), shutdown 429──► draining ──2 passing probes──► ready
 *
 *   In panic, one passing probe brings back a draining endpoint or one ejected for refused connections.
 */
export class HealthTracker {
  readonly #settings: HealthSettings;
  readonly #clock: Clock;
  readonly #listener: HealthListener;
  readonly #endpoints: () => readonly Endpoint[];
  readonly #random: () => number;
  readonly #panic: () => boolean;
  readonly #health = new Map<Endpoint, Health>();
  readonly #probing = new Set<Endpoint>();
  #recoveryRebuiltAt = -Infinity;

  /** `panic`: whether the picker is in panic mode (`EndpointSet.panic`, the picker's own threshold). */
  constructor(
    settings: HealthSettings,
    clock: Clock,
    listener: HealthListener,
    endpoints: () => readonly Endpoint[],
    random = Math.random,
    panic: () => boolean = () => false,
  ) {
    this.#settings = settings;
    this.#clock = clock;
    this.#listener = listener;
    this.#endpoints = endpoints;
    this.#random = random;
    this.#panic = panic;
  }

  /**
   * A connection could not be made or TLS failed (proven by the transport), or the endpoint went
   * silent (`unreachable`: a probe or connect timeout, an unanswered PING; inferred, so capped).
   */
  connectFailure(endpoint: Endpoint, reason: 'connect' | 'tls' | 'unreachable'): void {
    if (endpoint.removed) return;
    const h = this.#of(endpoint);
    if (endpoint.state === 'ejected' && h.reason !== 'throttled') return;
    if (reason === 'unreachable' && !this.#mayEjectInferred(endpoint)) return;
    this.#eject(endpoint, h, reason);
  }

  /**
   * Hedges keep winning against the endpoint and it has answered nothing for a while: most likely
   * a black hole. No new requests go there; those running there are left alone (their hedges, a
   * probe or an HTTP/2 PING settle them), so a merely stalled apiserver loses none.
   */
  silent(endpoint: Endpoint): void {
    if (endpoint.removed || (endpoint.state !== 'ready' && endpoint.state !== 'probing')) return;
    if (this.#mayEjectInferred(endpoint)) this.#eject(endpoint, this.#of(endpoint), 'unreachable');
  }

  /** A 5xx, a broken connection or a request timeout. */
  serverError(endpoint: Endpoint): void {
    if (endpoint.removed) return;
    const h = this.#of(endpoint);
    h.consecutiveFailures++;
    if (endpoint.state === 'probing' && h.probationInFlight) {
      this.#eject(endpoint, h, 'failures');
      return;
    }
    if (endpoint.state === 'ready' && h.consecutiveFailures >= this.#settings.consecutive5xx && this.#mayEjectInferred(endpoint)) {
      this.#eject(endpoint, h, 'failures');
    }
  }

  /**
   * Any answer that is not a server failure (at clock time `now`, read here if not given): the
   * endpoint works. `sentAt`: when its request went out (NaN: unknown).
   *
   * In panic, an answer to a request sent after the endpoint went out for a 429 ends its rest: the
   * picker sends callers' requests there anyway, and the server's newer answer supersedes its
   * Retry-After. Without this, a throttled retry skipped a recovered apiserver for the rest of a
   * huge Retry-After and passed a 429 on (docs/chaos.md, schedule 50).
   */
  success(endpoint: Endpoint, now = this.#clock.now(), sentAt = Number.NaN): void {
    if (endpoint.removed) return;
    const h = this.#health.get(endpoint);
    if (h) {
      h.consecutiveFailures = 0;
      if (endpoint.state === 'probing' && h.probationInFlight) {
        this.#restore(endpoint, h, 'probation');
        return;
      }
      if (endpoint.state === 'ejected' && h.reason === 'throttled' && sentAt >= h.since && this.#panic()) {
        this.#restore(endpoint, h, 'answer', false);
        return;
      }
    }
    if (endpoint.weightFactor < 1) {
      endpoint.weightFactor = Math.min(1, endpoint.weightFactor + WEIGHT_RECOVERY_STEP);
      if (endpoint.weightFactor === 1 || now - this.#recoveryRebuiltAt >= RECOVERY_REBUILD_MS) {
        this.#recoveryRebuiltAt = now;
        this.#listener.changed();
      }
    }
  }

  /**
   * API Priority and Fairness said 429: limits are per apiserver, so only this endpoint's share
   * drops, and it rests for its Retry-After while the others carry on.
   */
  throttled(endpoint: Endpoint, retryAfterMs: number | undefined): void {
    if (endpoint.removed) return;
    const h = this.#of(endpoint);
    endpoint.weightFactor = Math.max(MIN_WEIGHT_FACTOR, endpoint.weightFactor / 2);
    if (endpoint.state === 'ready' || endpoint.state === 'probing') {
      const ms = retryAfterMs ?? DEFAULT_THROTTLE_MS;
      this.#enter(endpoint, h, 'ejected', 'throttled');
      h.timer = this.#clock.setTimeout(() => {
        h.timer = undefined;
        if (endpoint.state === 'ejected' && h.reason === 'throttled') this.#restore(endpoint, h, 'retry-after', false);
      }, ms);
      this.#listener.eject(endpoint, 'throttled', ms);
    }
    this.#listener.changed();
  }

  /** The apiserver is shutting down (429 + Connection: close): no new requests, running ones finish. */
  shuttingDown(endpoint: Endpoint, retryAfterMs: number | undefined): void {
    if (endpoint.removed) return;
    const h = this.#of(endpoint);
    if (endpoint.state === 'draining') return;
    if (!this.#settings.probes) {
      // Nothing would ever bring it back from draining: rest like an ejection, then probation.
      this.#eject(endpoint, h, 'probe', retryAfterMs);
      return;
    }
    this.#drain(endpoint, h, 'shutdown');
  }

  /**
   * A probe result: rise and fall like a readiness probe, then probation semantics. `sentAt`: the
   * clock time the probe was sent (unknown: before anything), for `#backAtOnce`.
   */
  probeResult(endpoint: Endpoint, result: ProbeResult, sentAt = -Infinity): void {
    // A pass changes nothing for a ready endpoint: passes count only while draining, from the 0
    // that draining starts at (`#enter`). Most probes are that, so they read no health record.
    if (endpoint.removed || (result === 'pass' && endpoint.state === 'ready')) return;
    const h = this.#of(endpoint);
    if (result === 'connect' || result === 'tls' || result === 'unreachable') {
      h.probePasses = 0;
      this.connectFailure(endpoint, result);
      return;
    }
    if (result === 'fail') {
      h.probePasses = 0;
      // It answers, and is not ready: shutting down, or restarted and not yet through its
      // post-start hooks, while it already serves. Whatever its state, it drains, and only
      // passing probes bring it back: an ejected endpoint's probation (a caller's request, which
      // a not-ready apiserver serves) would have restored it while /readyz still failed.
      if (endpoint.state !== 'draining') this.#drain(endpoint, h, 'probe');
      return;
    }
    h.probePasses++;
    if (endpoint.state === 'probing' || this.#backAtOnce(endpoint, h, sentAt)) this.#restore(endpoint, h, 'probe');
    else if (endpoint.state === 'draining' && h.probePasses >= PROBES_TO_RETURN) this.#restore(endpoint, h, 'probe');
  }

  /**
   * An endpoint waiting for its probation request, marked as taken; `undefined` when none waits.
   * O(1) when nothing is probing, which is almost always.
   */
  takeProbation(): Endpoint | undefined {
    if (this.#probing.size === 0) return undefined;
    for (const endpoint of this.#probing) {
      const h = this.#of(endpoint);
      if (!h.probationInFlight) {
        h.probationInFlight = true;
        return endpoint;
      }
    }
    return undefined;
  }

  /** The probation request ended without a verdict (the caller aborted): another may try. */
  releaseProbation(endpoint: Endpoint): void {
    const h = this.#health.get(endpoint);
    if (h) h.probationInFlight = false;
  }

  /**
   * The endpoint left the set: drop its timers. Requests still running there end later; every
   * signal ignores a removed endpoint, so none brings it back into probation.
   */
  forget(endpoint: Endpoint): void {
    const h = this.#health.get(endpoint);
    if (h) this.#clearTimer(h);
    this.#health.delete(endpoint);
    this.#probing.delete(endpoint);
  }

  close(): void {
    for (const h of this.#health.values()) this.#clearTimer(h);
    this.#health.clear();
    this.#probing.clear();
  }

  #of(endpoint: Endpoint): Health {
    let h = this.#health.get(endpoint);
    if (!h) {
      h = {
        consecutiveFailures: 0,
        ejections: 0,
        lastEjectedAt: -Infinity,
        reason: undefined,
        timer: undefined,
        probationInFlight: false,
        probePasses: 0,
        since: this.#clock.now(),
      };
      this.#health.set(endpoint, h);
    }
    return h;
  }

  /**
   * Whether inferred evidence (silence, a probe timeout, a run of 5xx) may take `endpoint` out: only
   * within `maxEjectionPercent` of the endpoints out on such evidence, and never the last one
   * taking requests. When all look bad together the likely fault is the probe, the path or this
   * client (Envoy's panic threshold reasons the same way); proven (refused, TLS) and stated
   * (shutdown, 429, a failing /readyz) verdicts need no cap. An endpoint already out on trial
   * (`probing`) goes back out whatever the count.
   */
  #mayEjectInferred(endpoint: Endpoint): boolean {
    if (endpoint.state !== 'ready') return true;
    const all = this.#endpoints();
    let inferred = 0;
    let others = 0;
    for (const e of all) {
      if (e === endpoint || e.removed) continue;
      if (e.state === 'ready') others++;
      else if ((e.state === 'ejected' || e.state === 'probing') && isInferred(this.#health.get(e)?.reason)) inferred++;
    }
    return others > 0 && ((inferred + 1) * 100) / all.length <= this.#settings.maxEjectionPercent;
  }

  /**
   * Whether one passing probe brings `endpoint` back at once. Outside panic, none does: a draining
   * endpoint needs `PROBES_TO_RETURN`, and one ejected for refused connections serves its ejection
   * first (the backoff keeps a crash-looping apiserver from taking requests the others would serve).
   *
   * In panic (fewer ready than the picker's `panicThreshold`) the picker sends callers' requests to
   * the draining and ejected endpoints anyway, so waiting only sends their shutdown rejections and
   * refused connections to the callers; a restarted apiserver whose /readyz passes is better than
   * that, and Envoy un-ejects on one passing active health check by default
   * (`successful_active_health_check_uneject_host`). So in panic one pass brings back a draining
   * endpoint, or one ejected for refused connections (an apiserver restarting), if the probe was sent
   * after it went out (a pass sent before is stale: a shutdown fails /readyz only from its start).
   * With none ready (panic or not, even with `panicThreshold` 0) a refused one comes back as before
   * (docs/chaos.md, finding 6). A crash-looping apiserver still never comes back: its /readyz
   * fails, or its connections are refused. Ejections for other reasons (TLS, silence, 5xx, 429)
   * keep their timers: a pass proves none of those over.
   */
  #backAtOnce(endpoint: Endpoint, h: Health, sentAt: number): boolean {
    const state = endpoint.state;
    if (state === 'draining') return sentAt >= h.since && this.#panic();
    if (state !== 'ejected' || h.reason !== 'connect') return false;
    return (sentAt >= h.since && this.#panic()) || !this.#endpoints().some((e) => e.state === 'ready' && !e.removed);
  }

  #eject(endpoint: Endpoint, h: Health, reason: EjectReason, atLeastMs = 0): void {
    const now = this.#clock.now();
    const { baseEjectionMs, maxEjectionMs } = this.#settings;
    // A long healthy stretch forgives earlier ejections.
    if (now - h.lastEjectedAt > 4 * maxEjectionMs) h.ejections = 0;
    h.ejections++;
    h.lastEjectedAt = now;
    const jitter = 0.8 + 0.4 * this.#random();
    const ms = Math.max(atLeastMs, Math.min(maxEjectionMs, baseEjectionMs * 2 ** (h.ejections - 1) * jitter));
    this.#enter(endpoint, h, 'ejected', reason);
    h.timer = this.#clock.setTimeout(() => {
      h.timer = undefined;
      if (endpoint.state !== 'ejected') return;
      endpoint.state = 'probing';
      // A certificate that failed verification is no passing fault: a caller's request would only
      // fail on it again. Probes (which verify the same way) bring it back; requests do only
      // when there are no probes.
      if (reason !== 'tls' || !this.#settings.probes) this.#probing.add(endpoint);
      this.#listener.changed();
    }, ms);
    this.#listener.eject(endpoint, reason, ms);
    this.#listener.changed();
  }

  #drain(endpoint: Endpoint, h: Health, reason: 'probe' | 'shutdown'): void {
    this.#enter(endpoint, h, 'draining', undefined);
    this.#listener.drain(endpoint, reason);
    this.#listener.changed();
  }

  #restore(endpoint: Endpoint, h: Health, via: RestoreVia, slowStart = true): void {
    this.#enter(endpoint, h, 'ready', undefined);
    if (slowStart) {
      const now = this.#clock.now();
      endpoint.readySince = now;
      // Back from an ejection or a drain: its latency is measured afresh (a 429's rest keeps it).
      endpoint.latency.restart(now);
      endpoint.relative.restart(now);
    }
    this.#listener.restore(endpoint, via);
    this.#listener.changed();
  }

  /**
   * Every move between ready, ejected and draining: whatever was under way in the old state (its
   * timer, its probation request, its counts) says nothing about the new one.
   */
  #enter(endpoint: Endpoint, h: Health, state: EndpointState, reason: EjectReason | undefined): void {
    this.#clearTimer(h);
    this.#probing.delete(endpoint);
    h.reason = reason;
    h.probePasses = 0;
    h.consecutiveFailures = 0;
    h.probationInFlight = false;
    h.since = this.#clock.now();
    endpoint.state = state;
    // Only a connection that failed or went silent proves it out of reach; a 429 or 5xx is an answer.
    endpoint.unreachable = reason === 'connect' || reason === 'tls' || reason === 'unreachable';
  }

  #clearTimer(h: Health): void {
    if (h.timer !== undefined) this.#clock.clearTimeout(h.timer);
    h.timer = undefined;
  }
}

/** Ejections read from silence or from a run of failures, not proven by the transport or stated by the server. */
function isInferred(reason: EjectReason | undefined): boolean {
  return reason === 'unreachable' || reason === 'failures';
}

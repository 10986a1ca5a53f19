import type { Endpoint } from '../balancer/Endpoint.ts';
import type { EndpointSet } from '../balancer/EndpointSet.ts';
import type { Clock, ClockTimer } from '../clock.ts';

/**
 * How long a moved watch is expected back. Informers re-watch at once after events, but
 * client-node's waits up to 30 s after quiet stretches; until it is back, the endpoint it is
 * headed for counts it (and the next watch to start goes there), so quiet informers are not moved
 * one after another in the meantime.
 */
const IN_TRANSIT_MS = 30_000;

/** An open watch whose response can be ended for the caller at an event boundary. */
export interface MovableWatch {
  move(): void;
}

/**
 * Places watches by this client's quotas (`claim`) and moves open ones onto an endpoint that
 * joined or came back. Watches stay for up to an hour once placed: without moves, a restarted
 * apiserver gets none until they end on their own. Each step ends the oldest watch on
 * the endpoint furthest above its quota; the caller re-watches from its last resourceVersion and
 * the next watch to start goes to the endpoint furthest below (`claim`). Steps are at least
 * `1 / maxPerSecond` s apart and happen only while some endpoint is below its quota, so a balanced
 * set sees none. Nudged by joins and returns; it stops by itself once balanced.
 *
 * Quotas are the client's watches shared out by the endpoints' shares, rounded with a random
 * offset drawn once per client (systematic rounding): a client with 3 watches and 5 endpoints gets
 * quotas such as 1,1,0,1,0, each endpoint 3/5 of a watch on average, so that across a fleet every
 * apiserver gets its share even though each client on its own cannot split a watch. Rounding the
 * same way in every client (or moving only when that lowers the client's own highest load) leaves
 * the fleet where it was after a scale-out: every client's 3 watches on the 3 old apiservers.
 *
 * Nothing here runs per short request: only watches that reached their caller are registered, and
 * only long-running requests are placed.
 */
export class WatchRebalancer {
  readonly #set: EndpointSet;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  readonly #moved: (from: Endpoint, to: Endpoint) => void;
  /** Open watches per endpoint, oldest first (a Set keeps insertion order). */
  readonly #watches = new Map<Endpoint, Set<MovableWatch>>();
  /** Moved watches not yet back: where each is expected, and until when. */
  #inTransit: Array<{ to: Endpoint; until: number }> = [];
  #timer: ClockTimer | undefined;
  #timerAt = Infinity;
  #lastMove = -Infinity;
  #closed = false;
  /** This client's offset for rounding quotas, in [0, 1). */
  readonly #offset: number;
  /** This client's wait beyond the watch-cache grace, ms. */
  readonly #graceMs: number;
  readonly #random: () => number;

  /**
   * `graceMs`: a watch is not moved onto an endpoint ready for less than this (plus up to a third of
   * it, at random per client, so that a fleet whose clients all saw the endpoint return does not
   * move its watches in the same second). A restarted or new apiserver's watch cache begins at the
   * resourceVersion it started from and answers a watch from an older one with 410, after which
   * the informer re-lists (a LIST, the most expensive request there is); watches elsewhere get a
   * bookmark about once a minute, so after that their resourceVersion is newer than that cache.
   * `npm run fleet -- --scenario rolling-restart`: without it, every watch moved onto a returning
   * apiserver re-listed.
   */
  constructor(set: EndpointSet, clock: Clock, settings: { maxPerSecond: number; graceMs: number }, moved: (from: Endpoint, to: Endpoint) => void, random: () => number = Math.random) {
    this.#set = set;
    this.#clock = clock;
    this.#intervalMs = 1000 / settings.maxPerSecond;
    this.#moved = moved;
    this.#offset = random();
    this.#graceMs = settings.graceMs * (1 + random() / 3);
    this.#random = random;
  }

  opened(endpoint: Endpoint, watch: MovableWatch): void {
    let watches = this.#watches.get(endpoint);
    if (!watches) {
      watches = new Set();
      this.#watches.set(endpoint, watches);
    }
    watches.add(watch);
  }

  /**
   * Where the next long-running request should go. A moved watch on its way: the endpoint it was
   * moved for (the picker alone would place it on any endpoint with the fewest streams, often the
   * one it left); whichever watch starts next takes the place. Otherwise the endpoint furthest below
   * its quota once this stream counts (ties at random), among those past their watch-cache grace;
   * `undefined` (the picker decides) when none is.
   *
   * Placing by quota, not by fewest streams, keeps a balanced fleet balanced. After a scale-out the
   * watches moved onto the newcomers are young, so for minutes the watches that end are the old
   * apiservers'; by fewest streams each went to one of the client's empty endpoints, as often an
   * old one as a new one, and the newcomers kept gaining (`npm run fleet -- --scenario scale-out`:
   * watches max/min 1.1 after the moves, 1.43 five minutes later). By quota it goes back where the
   * client's share says, usually the endpoint it left.
   */
  claim(): Endpoint | undefined {
    const now = this.#clock.now();
    while (this.#inTransit.length > 0) {
      const { to, until } = this.#inTransit.shift()!;
      if (until > now && !to.removed && to.state === 'ready') return to;
    }
    return this.#place(now);
  }

  closed(endpoint: Endpoint, watch: MovableWatch): void {
    const watches = this.#watches.get(endpoint);
    if (!watches) return;
    watches.delete(watch);
    if (watches.size === 0) this.#watches.delete(endpoint);
  }

  /** An endpoint joined or came back: start moving watches, within the rate. */
  nudge(): void {
    this.#wake(this.#lastMove + this.#intervalMs);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Runs a step at clock time `at` (or now, if that has passed), unless one is due sooner. */
  #wake(at: number): void {
    if (this.#closed || (this.#timer !== undefined && this.#timerAt <= at)) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.#clock.setTimeout(() => this.#step(), Math.max(0, at - this.#clock.now()));
  }

  #step(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    if (this.#closed) return;
    // Node computes a timer's deadline from the event loop's cached time, which lags after a long
    // synchronous stretch: the timer can fire before `maxPerSecond` allows. The clock decides.
    const due = this.#lastMove + this.#intervalMs;
    if (this.#clock.now() < due) return this.#wake(due);
    const plan = this.#plan();
    if (!plan) return;
    if ('until' in plan) return this.#wake(plan.until);
    this.#lastMove = this.#clock.now();
    this.#inTransit.push({ to: plan.to, until: this.#lastMove + IN_TRANSIT_MS });
    plan.watch.move();
    this.#moved(plan.from, plan.to);
    this.#wake(this.#lastMove + this.#intervalMs);
  }

  /**
   * The watch to move, if an endpoint is below its quota: the target is the one furthest below
   * (counting watches headed there), the source the ready endpoint furthest above — one that
   * takes no share (an idle priority level, a backup) has a quota of 0. `until`: the only endpoints
   * below quota are still in their watch-cache grace; look again then.
   */
  #plan(): { watch: MovableWatch; from: Endpoint; to: Endpoint } | { until: number } | undefined {
    const now = this.#clock.now();
    this.#inTransit = this.#inTransit.filter((t) => t.until > now);
    const expected = new Map<Endpoint, number>();
    for (const { to } of this.#inTransit) expected.set(to, (expected.get(to) ?? 0) + 1);
    const quotas = this.#quotas(expected);
    let to: Endpoint | undefined;
    let toDeficit = 0;
    let until = Infinity;
    for (const [endpoint, quota] of quotas) {
      const deficit = quota - endpoint.streams - (expected.get(endpoint) ?? 0);
      if (deficit <= toDeficit) continue;
      const eligible = endpoint.readySince + this.#graceMs;
      if (eligible > now) {
        until = Math.min(until, eligible);
        continue;
      }
      to = endpoint;
      toDeficit = deficit;
    }
    if (!to) return until < Infinity ? { until } : undefined;
    let from: Endpoint | undefined;
    let fromSurplus = 0;
    for (const endpoint of this.#watches.keys()) {
      if (endpoint === to || endpoint.removed || endpoint.state !== 'ready') continue;
      const surplus = endpoint.streams - (quotas.get(endpoint) ?? 0);
      if (surplus > fromSurplus) {
        from = endpoint;
        fromSurplus = surplus;
      }
    }
    const watch = from && this.#watches.get(from)?.values().next().value;
    if (from && watch) return { watch, from, to };
    return until < Infinity ? { until } : undefined;
  }

  /** The endpoint furthest below its quota with one more stream, past its grace; ties at random. */
  #place(now: number): Endpoint | undefined {
    const quotas = this.#quotas(new Map(), 1);
    let best: Endpoint | undefined;
    let bestDeficit = 0;
    let ties = 0;
    for (const [endpoint, quota] of quotas) {
      const deficit = quota - endpoint.streams;
      if (deficit < bestDeficit || deficit <= 0 || endpoint.removed || endpoint.state !== 'ready') continue;
      if (endpoint.readySince + this.#graceMs > now) continue;
      if (deficit > bestDeficit) {
        best = endpoint;
        bestDeficit = deficit;
        ties = 1;
      } else if (this.#random() * ++ties < 1) {
        // Reservoir sampling: each of the tied endpoints is kept with probability 1 / ties.
        best = endpoint;
      }
    }
    return best;
  }

  /**
   * Every endpoint's quota: the client's streams (open, and moved ones on their way) times its
   * share, rounded systematically with this client's offset, in the set's order. Quotas add up
   * to the streams (plus `extra`, a stream about to open); each is its exact share on average over
   * offsets, so over clients.
   */
  #quotas(expected: ReadonlyMap<Endpoint, number>, extra = 0): Map<Endpoint, number> {
    const shares = this.#set.shares();
    let streams = extra;
    let total = 0;
    for (const [endpoint, share] of shares) {
      streams += endpoint.streams + (expected.get(endpoint) ?? 0);
      total += share;
    }
    for (const endpoint of this.#watches.keys()) if (!shares.has(endpoint)) streams += endpoint.streams;
    const quotas = new Map<Endpoint, number>();
    if (total <= 0) return quotas;
    let cumulative = 0;
    let below = Math.floor(this.#offset);
    for (const [endpoint, share] of shares) {
      cumulative += (streams * share) / total;
      // The rounding error of the running sum must not make the last quota miss a stream.
      const upTo = Math.floor(cumulative + this.#offset + 1e-9);
      quotas.set(endpoint, upTo - below);
      below = upTo;
    }
    return quotas;
  }
}

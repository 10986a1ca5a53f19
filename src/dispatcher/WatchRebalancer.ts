import type { Endpoint } from '../balancer/Endpoint.ts';
import type { EndpointSet } from '../balancer/EndpointSet.ts';
import type { Clock, ClockTimer } from '../clock.ts';

/**
 * How long a moved watch is expected back. Informers re-watch at once after events, but
 * client-node's waits up to 30 s after quiet stretches; until it is back, the endpoint it is
 * headed for counts it, so quiet informers are not moved one after another in the meantime.
 */
const IN_TRANSIT_MS = 30_000;

/** An open watch whose response can be ended for the caller at an event boundary. */
export interface MovableWatch {
  move(): void;
}

/**
 * Moves open watches onto an endpoint that joined or came back. Watches are placed where the
 * fewest streams are open when they start, but then stay for up to an hour: without this, a
 * restarted apiserver gets none until they end on their own. Each step ends the oldest watch on
 * the most loaded endpoint (open streams per unit of its share); the caller re-watches from its
 * last resourceVersion and the picker places it where the fewest streams are. Steps are at least
 * `1 / maxPerSecond` s apart and happen only while one would strictly lower the highest load, so a
 * balanced set sees none. Nudged by joins and returns; it stops by itself once balanced.
 *
 * Nothing here runs per request: only watches that reached their caller are registered.
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
  #lastMove = -Infinity;
  #closed = false;

  constructor(set: EndpointSet, clock: Clock, maxPerSecond: number, moved: (from: Endpoint, to: Endpoint) => void) {
    this.#set = set;
    this.#clock = clock;
    this.#intervalMs = 1000 / maxPerSecond;
    this.#moved = moved;
  }

  opened(endpoint: Endpoint, watch: MovableWatch): void {
    let watches = this.#watches.get(endpoint);
    if (!watches) {
      watches = new Set();
      this.#watches.set(endpoint, watches);
    }
    watches.add(watch);
    // A watch that opens is most likely one that was moved, back.
    this.#inTransit.shift();
  }

  closed(endpoint: Endpoint, watch: MovableWatch): void {
    const watches = this.#watches.get(endpoint);
    if (!watches) return;
    watches.delete(watch);
    if (watches.size === 0) this.#watches.delete(endpoint);
  }

  /** An endpoint joined or came back: start moving watches, within the rate. */
  nudge(): void {
    if (this.#closed || this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastMove + this.#intervalMs - this.#clock.now());
    this.#timer = this.#clock.setTimeout(() => this.#step(), wait);
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #step(): void {
    this.#timer = undefined;
    if (this.#closed) return;
    const move = this.#plan();
    if (!move) return;
    this.#lastMove = this.#clock.now();
    this.#inTransit.push({ to: move.to, until: this.#lastMove + IN_TRANSIT_MS });
    move.watch.move();
    this.#moved(move.from, move.to);
    this.#timer = this.#clock.setTimeout(() => this.#step(), this.#intervalMs);
  }

  /**
   * The watch to move, if moving it lowers the load: the target is where the picker would place a
   * new watch (fewest streams per share); the source is the ready endpoint with the most, one that
   * takes no share (an idle priority level, a backup) counting as infinitely loaded.
   */
  #plan(): { watch: MovableWatch; from: Endpoint; to: Endpoint } | undefined {
    const now = this.#clock.now();
    this.#inTransit = this.#inTransit.filter((t) => t.until > now);
    const expected = new Map<Endpoint, number>();
    for (const { to } of this.#inTransit) expected.set(to, (expected.get(to) ?? 0) + 1);
    const shares = this.#set.shares();
    let to: Endpoint | undefined;
    let toLoad = Infinity;
    for (const [endpoint, share] of shares) {
      if (share <= 0) continue;
      const load = (endpoint.streams + (expected.get(endpoint) ?? 0) + 1) / share;
      if (load < toLoad) {
        to = endpoint;
        toLoad = load;
      }
    }
    if (!to) return undefined;
    let from: Endpoint | undefined;
    let fromLoad = toLoad;
    for (const endpoint of this.#watches.keys()) {
      if (endpoint === to || endpoint.removed || endpoint.state !== 'ready') continue;
      const share = shares.get(endpoint) ?? 0;
      const load = share > 0 ? endpoint.streams / share : Infinity;
      if (load > fromLoad) {
        from = endpoint;
        fromLoad = load;
      }
    }
    const watch = from && this.#watches.get(from)?.values().next().value;
    return from && watch ? { watch, from, to } : undefined;
  }
}

import type { Endpoint } from '../../src/balancer/Endpoint.ts';
import { EndpointSet, type PickerOptions } from '../../src/balancer/EndpointSet.ts';
import { Hedging } from '../../src/dispatcher/Hedge.ts';
import { FakeClock } from './FakeClock.ts';
import { address, pickerOptions } from './endpoints.ts';

/** A capacity-bound server: `slots` requests at once, the rest wait in order (an apiserver's APF seats, roughly). */
export interface SimulatedServer {
  slots: number;
  /** Service time of the next request, ms; `Infinity`: it never answers (a black hole). */
  serviceMs: number;
  /** Service time of the next request to start only (ms), then `serviceMs` again: one outlier. */
  nextMs?: number;
  /** Stopped answering: requests are taken and never answered. */
  busy: number;
  queue: Array<() => void>;
}

export interface SimulatedRequest {
  /** Feeds the latency estimate (a GET of one object). */
  timed: boolean;
  /** Multiplies the server's service time (a LIST of thousands costs many GETs). */
  cost: number;
  /** Not timed, but of this class (`requestClass`): feeds the endpoint's `relative` estimate. */
  loadClass?: string;
}

export interface Simulation {
  clock: FakeClock;
  set: EndpointSet;
  servers: SimulatedServer[];
  /** Endpoint index (in `set.list()` order, which is the servers' order) of every request, by send time. */
  picks: Array<{ at: number; server: number }>;
  /** Completed requests (the callers'; not exploration copies): when sent, latency ms, the server that answered. */
  done: Array<{ at: number; ms: number; server: number }>;
  /** Exploration copies sent (`explore`). */
  copies: number;
  /** Runs for `ms` of fake time. */
  run(ms: number): void;
  /** Share of the requests sent in [from, to) that went to `server`. */
  share(server: number, from: number, to: number): number;
}

/** A seeded PRNG (mulberry32), so that every run of a test sees the same service-time jitter. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A client with the real `EndpointSet` (picker and load tracking, fake clock) in front of simulated
 * capacity-bound servers. Arrivals are open (`rate` per second, evenly paced) or closed
 * (`concurrency` requests always in flight). Service times jitter ±5 %; 0.2 ms each way on the wire.
 */
export function simulate(options: {
  serviceMs: number[];
  slots?: number;
  rate?: number;
  concurrency?: number;
  request?: (i: number) => SimulatedRequest;
  picker?: Partial<PickerOptions>;
  seed?: number;
  /** Mean of an exponentially distributed extra delay on every answer (ms): a busy machine's noise. */
  jitterMs?: number;
  /**
   * A shared machine's other noise: now and then (exponential gaps of mean `everyMs`) one process
   * is not scheduled for `ms` — the client (every answer waits) or one server (its answers wait) —
   * and whatever would have happened meanwhile happens when it runs again.
   */
  stalls?: { everyMs: number; ms: number };
  /**
   * Hedging's exploration (src/dispatcher/Explore.ts), with a real `Hedging` for its credit: a
   * timed request picked for a lagging endpoint goes there as a copy, its answer only measured,
   * and the caller's to the picker's next other endpoint; a lagging endpoint due a re-measure
   * (`EndpointSet.toMeasure`) gets a copy of any such request, which keeps its pick. Copied are the
   * GETs whose latency the weights follow: timed ones, or those of a `GET …` class.
   */
  explore?: boolean;
}): Simulation {
  const clock = new FakeClock();
  const random = seeded(options.seed ?? 1);
  const set = new EndpointSet(clock, pickerOptions({ slowStartMs: 0, ...options.picker }));
  set.update(options.serviceMs.map((_, i) => address(i)));
  const endpoints = set.list();
  const index = new Map<Endpoint, number>(endpoints.map((e, i) => [e, i]));
  const servers: SimulatedServer[] = options.serviceMs.map((serviceMs) => ({ slots: options.slots ?? 4, serviceMs, busy: 0, queue: [] }));
  const picks: Simulation['picks'] = [];
  const done: Simulation['done'] = [];
  const request = options.request ?? ((): SimulatedRequest => ({ timed: true, cost: 1 }));
  let sent = 0;
  let end = 0;
  let started = false;
  // Stall windows of the client (index 0) and of each server (1…), drawn ahead up to 5 minutes.
  const stalls: Array<Array<[number, number]>> = options.serviceMs.map(() => []);
  stalls.push([]);
  if (options.stalls) {
    const { everyMs, ms } = options.stalls;
    for (let at = clock.now() - Math.log(1 - random()) * everyMs; at < clock.now() + 300_000; at += -Math.log(1 - random()) * everyMs) {
      stalls[Math.floor(random() * stalls.length)]!.push([at, at + ms]);
    }
  }
  /** Delay (ms) until `who` (0: the client, 1…: a server) runs again if it is stalled now. */
  const stalled = (who: number): number => {
    const now = clock.now();
    const window = stalls[who]!.find(([from, to]) => from <= now && now < to);
    return window ? window[1] - now : 0;
  };

  const serve = (server: SimulatedServer, cost: number, answer: () => void): void => {
    const start = (): void => {
      server.busy++;
      const ms = (server.nextMs ?? server.serviceMs) * cost * (0.95 + 0.1 * random());
      server.nextMs = undefined;
      if (!Number.isFinite(ms)) return; // a black hole keeps the slot and never answers
      const done = (): void => {
        server.busy--;
        answer();
        server.queue.shift()?.();
      };
      clock.setTimeout(() => {
        const wait = stalled(servers.indexOf(server) + 1);
        if (wait > 0) clock.setTimeout(done, wait);
        else done();
      }, ms);
    };
    if (server.busy < server.slots) start();
    else server.queue.push(start);
  };

  const hedging = options.explore ? new Hedging({ minDelayMs: 50, maxDelayMs: 250, percentile: 99 }, clock, () => {}) : undefined;
  /** One request to `endpoint`: the caller's, or an exploration copy. */
  const dispatch = (endpoint: Endpoint, timed: boolean, cost: number, caller: boolean, then?: () => void, loadClass?: string): void => {
    const at = clock.now();
    const i = index.get(endpoint)!;
    picks.push({ at, server: i });
    endpoint.inFlight++;
    const startedAt = timed ? set.timedStart(endpoint) : loadClass !== undefined ? set.classStart(endpoint) : NaN;
    clock.setTimeout(() => {
      serve(servers[i]!, cost, () => {
        const noise = options.jitterMs ? -Math.log(1 - random()) * options.jitterMs : 0;
        const deliver = (): void => {
          const wait = stalled(0);
          if (wait > 0) clock.setTimeout(deliver, wait);
          else received();
        };
        const received = (): void => {
          endpoint.inFlight--;
          set.shortEnded(endpoint, startedAt, false, clock.now(), timed ? undefined : loadClass);
          if (!caller) return hedging?.heard(endpoint, clock.now());
          hedging?.answered(endpoint, clock.now() - at);
          done.push({ at, ms: clock.now() - at, server: i });
          then?.();
        };
        clock.setTimeout(deliver, 0.2 + noise);
      });
    }, 0.2);
  };
  const send = (then?: () => void): void => {
    const { timed, cost, loadClass } = request(sent++);
    const endpoint = set.pick({ longRunning: false })!;
    // As `explore`: a lagging endpoint picked, or one due a re-measure (`set.toMeasure`), gets a copy of a GET.
    const lagging = hedging && (timed || loadClass?.startsWith('GET ')) ? set.toMeasure(endpoint, timed, loadClass) : undefined;
    if (lagging && hedging!.mayExplore()) {
      const other = lagging === endpoint ? set.pick({ longRunning: false, exclude: new Set([endpoint]) }) : endpoint;
      if (other) {
        hedging!.explored();
        sim.copies++;
        dispatch(lagging, timed, cost, false, undefined, loadClass);
        return dispatch(other, timed, cost, true, then, loadClass);
      }
    }
    dispatch(endpoint, timed, cost, true, then, loadClass);
  };

  const sim: Simulation = {
    clock,
    set,
    servers,
    picks,
    done,
    copies: 0,
    run(ms) {
      end = clock.now() + ms;
      if (started) {
        clock.advance(ms);
        return;
      }
      started = true;
      if (options.rate !== undefined) {
        const gap = 1000 / options.rate;
        // Keeps ticking past `end` with nothing to send, so that a later `run` carries on.
        const tick = (): void => {
          if (clock.now() < end) send();
          clock.setTimeout(tick, gap);
        };
        tick();
      } else {
        const loop = (): void => {
          if (clock.now() < end) send(loop);
          else clock.setTimeout(loop, 1);
        };
        for (let c = 0; c < (options.concurrency ?? 1); c++) loop();
      }
      clock.advance(ms);
    },
    share(server, from, to) {
      const inRange = picks.filter((p) => p.at >= from && p.at < to);
      return inRange.length === 0 ? 0 : inRange.filter((p) => p.server === server).length / inRange.length;
    },
  };
  return sim;
}

import type { Scheduler } from '../sim/Scheduler.ts';
import type { Random } from '../sim/random.ts';
import { RetryAfter } from './RetryAfter.ts';

export type RequestKind = 'get' | 'list' | 'write' | 'watch';

/** A transport failure as the client's HTTP/2 stack would report it. */
export type WireError = 'ECONNREFUSED' | 'ECONNRESET' | 'GOAWAY';

/** The client side of one request on one connection; the server calls it back. */
export interface Exchange {
  readonly kind: RequestKind;
  /** A watch: the virtual time its resourceVersion was current (what the watch cache checks). */
  readonly since: number;
  /** A watch: when the server ends it (`timeoutSeconds`), ms after it opens. */
  readonly timeoutMs: number;
  /**
   * Discovery's own request (a `kubernetes:` target's LIST or WATCH of the `default/kubernetes`
   * EndpointSlice): counted apart from the workload's, and told the slice's watch events.
   */
  readonly discovery?: boolean;
  /** An open discovery watch gets one event (a JSON line). */
  event?(line: string): void;
  /** The response head (and, for a short request, all of it). A watch answered 200 stays open until `ended` or `failed`. */
  respond(status: number, headers: Record<string, string>, body: string): void;
  /** The server ended the watch (its timeout), between events. */
  ended(): void;
  failed(error: WireError): void;
}

export interface ApiserverConfig {
  /**
   * Concurrency seats of the priority level the fleet's requests fall in. kube-apiserver's 600
   * (`--max-requests-inflight` 400 + `--max-mutating-requests-inflight` 200) split by the default
   * nominal shares: workload-low has 100 of 245, so ⌈600 × 100 / 245⌉ = 245 seats (KEP-1040).
   */
  seats: number;
  /** Requests the level may queue (APF: 128 queues × 50 for workload-low); beyond it, 429 at once. */
  queueLimit: number;
  /** Longest a queued request waits before it is rejected with 429 (a quarter of the 60 s request timeout). */
  queueWaitMs: number;
  /** Mean service time by kind (a watch: its initialisation), ms; each request draws 0.5–1.5 × this. */
  serviceMs: Record<RequestKind, number>;
  /** Seats a request of each kind occupies (APF's width estimate: a LIST takes more). */
  width: Record<RequestKind, number>;
  /** Round trip between a client and the server, ms. */
  rttMs: number;
  /** `--goaway-chance`: each HTTP/2 request ends its connection with this probability. */
  goawayChance: number;
  /** `--shutdown-send-retry-after` (true), or the default shutdown. */
  sendRetryAfter: boolean;
  /** SIGTERM until NotAcceptingNewRequest: the pre-shutdown hooks (endpoint reconciler removing itself). */
  hooksMs: number;
  /** NotAcceptingNewRequest until the process exits and its remaining connections break. */
  exitMs: number;
}

export const defaultApiserver: ApiserverConfig = {
  seats: 245,
  queueLimit: 128 * 50,
  queueWaitMs: 15_000,
  serviceMs: { get: 5, list: 60, write: 15, watch: 3 },
  width: { get: 1, list: 3, write: 1, watch: 1 },
  rttMs: 1,
  goawayChance: 0,
  sendRetryAfter: false,
  hooksMs: 1_000,
  exitMs: 2_000,
};

/**
 * - `down`: no process; connections are refused.
 * - `starting`: listening and serving, `/readyz` failing until its watch cache and hooks are done.
 * - `ready`: serving, `/readyz` ok.
 * - `terminating`: SIGTERM received: `/readyz` fails at once, requests are still served.
 * - `closing`: NotAcceptingNewRequest has fired: the default shutdown has closed the listener and
 *   sent GOAWAY; with `--shutdown-send-retry-after` the listener stays and every new request gets
 *   429 + `Retry-After: 5` + `Connection: close`. In-flight requests and open watches go on until exit.
 */
export type ApiserverState = 'down' | 'starting' | 'ready' | 'terminating' | 'closing';

/** One HTTP/2 connection from one client. */
export class Connection {
  readonly server: Apiserver;
  open = true;
  /** Virtual time from which the client knows of the server's GOAWAY: new requests need a new connection. */
  goawayAt = Infinity;
  /** When the server sent GOAWAY: streams the client opens after it are not processed. */
  goawaySentAt = Infinity;
  /**
   * Its open streams, oldest first, as a list through the streams themselves: a Set of one or two
   * streams that one is added to and removed from at every request shrank (a new table) each time.
   */
  #first: Stream | undefined;
  #last: Stream | undefined;

  constructor(server: Apiserver) {
    this.server = server;
  }

  add(stream: Stream): void {
    if (stream.listed) return;
    stream.listed = true;
    stream.prev = this.#last;
    stream.next = undefined;
    if (this.#last) this.#last.next = stream;
    else this.#first = stream;
    this.#last = stream;
  }

  delete(stream: Stream): void {
    if (!stream.listed) return;
    stream.listed = false;
    if (stream.prev) stream.prev.next = stream.next;
    else this.#first = stream.next;
    if (stream.next) stream.next.prev = stream.prev;
    else this.#last = stream.prev;
    stream.prev = stream.next = undefined;
  }

  /** Removes every stream, oldest first, and returns them. */
  takeAll(): Stream[] {
    const all: Stream[] = [];
    for (let stream = this.#first; stream; ) {
      const next = stream.next;
      stream.listed = false;
      stream.prev = stream.next = undefined;
      all.push(stream);
      stream = next;
    }
    this.#first = this.#last = undefined;
    return all;
  }

  /** Whether new requests may go on this connection at `now`. */
  usable(now: number): boolean {
    return this.open && now < this.goawayAt;
  }
}

/** One request inside a server. */
export class Stream {
  readonly connection: Connection;
  readonly exchange: Exchange;
  state: 'queued' | 'serving' | 'watching' | 'done' = 'queued';
  enqueuedAt = 0;
  timer: object | undefined;
  /** Its place in its connection's list of open streams. */
  listed = false;
  prev: Stream | undefined;
  next: Stream | undefined;

  constructor(connection: Connection, exchange: Exchange) {
    this.connection = connection;
    this.exchange = exchange;
  }
}

/** What the server tells the run's meters. */
export interface ApiserverMeter {
  arrived(server: number, kind: RequestKind, discovery?: boolean): void;
  /** A watch event sent to a discovery watch. */
  discoveryEvent(server: number): void;
  rejected(server: number): void;
  /** A `/readyz` probe reached it. */
  probed(server: number): void;
  /** A short request reached it after SIGTERM (`/readyz` failing): one a client sent before it saw the drain. */
  afterSigterm(server: number): void;
}

// Both 429s are Go's `http.Error` text, not a Status (k8s.io/apiserver pkg/server/filters/with_retry_after.go,
// priority-and-fairness.go; research/landscape-2026.md "Graceful shutdown", "APF 429 semantics").
const SHUTDOWN_429_BODY = 'The apiserver is shutting down, please try again later.\n';
const APF_429_BODY = 'Too many requests, please try again later.\n';
const GONE_BODY = '{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}';

/**
 * A kube-apiserver as the fleet sees it: one API Priority and Fairness level with seats and a queue,
 * service times by request kind, a watch cache that starts when the process does, `/readyz`, the two
 * shutdown sequences and `--goaway-chance`. Facts from ../shared/research/landscape-2026.md
 * ("Graceful shutdown, exactly as the code does it", "APF 429 semantics", `--goaway-chance`).
 */
export class Apiserver {
  readonly index: number;
  readonly address: string;
  readonly config: ApiserverConfig;
  state: ApiserverState = 'ready';
  /** Service times are multiplied by this (a slow etcd, a noisy neighbour). */
  slowFactor = 1;
  /** Virtual time the process (and so its watch cache) started; older resourceVersions get 410. */
  cacheStart = -Infinity;
  readonly #clock: Scheduler;
  readonly #random: Random;
  readonly #meter: ApiserverMeter;
  readonly #connections = new Set<Connection>();
  readonly #watches = new Set<Stream>();
  /** Open discovery watches (EndpointSlice), not in `#watches`: the workload's watches are measured apart. */
  readonly #discoveryWatches = new Set<Stream>();
  readonly #queue: Array<Stream | undefined> = [];
  #queueHead = 0;
  #queued = 0;
  #busy = 0;
  #queueTimer: object | undefined;
  readonly #retryAfter = new RetryAfter();
  /** Listeners told when `/readyz` changes (the endpoint reconciler, DNS, an L4 health check read it). */
  readonly #readiness: Array<() => void> = [];

  constructor(index: number, config: ApiserverConfig, clock: Scheduler, random: Random, meter: ApiserverMeter) {
    this.index = index;
    this.address = `10.0.0.${index + 11}`;
    this.config = config;
    this.#clock = clock;
    this.#random = random;
    this.#meter = meter;
  }

  get ready(): boolean {
    return this.state === 'ready';
  }

  get listening(): boolean {
    return this.state === 'starting' || this.state === 'ready' || this.state === 'terminating' || (this.state === 'closing' && this.config.sendRetryAfter);
  }

  get watchCount(): number {
    return this.#watches.size;
  }

  get discoveryWatchCount(): number {
    return this.#discoveryWatches.size;
  }

  /** The `default/kubernetes` EndpointSlice changed (or a bookmark is due): one event to each discovery watch here. */
  discoveryEvent(line: string): void {
    for (const stream of this.#discoveryWatches) {
      this.#meter.discoveryEvent(this.index);
      stream.exchange.event?.(line);
    }
  }

  get busySeats(): number {
    return this.#busy;
  }

  onReadiness(listener: () => void): void {
    this.#readiness.push(listener);
  }

  /** A new connection, or `undefined` when nothing listens (ECONNREFUSED). */
  connect(): Connection | undefined {
    if (!this.listening) return undefined;
    const connection = new Connection(this);
    this.#connections.add(connection);
    return connection;
  }

  /** `/readyz`: 200 only while ready; `undefined` when the connection is refused. */
  readyz(): boolean | undefined {
    if (!this.listening) return undefined;
    this.#meter.probed(this.index);
    return this.ready;
  }

  /**
   * A request arrives on `connection` (sent now; the round trip is added to its answer). Returns its
   * stream while the server holds it (so the client can cancel it).
   */
  handle(connection: Connection, exchange: Exchange): Stream | undefined {
    const now = this.#clock.now();
    if (!connection.open) return void this.#later(() => exchange.failed('ECONNRESET'));
    if (now >= connection.goawaySentAt) {
      // Opened after the GOAWAY left the server: never processed (Go ignores streams above its last stream id).
      return void this.#later(() => exchange.failed('GOAWAY'));
    }
    this.#meter.arrived(this.index, exchange.kind, exchange.discovery);
    if ((this.state === 'terminating' || this.state === 'closing') && exchange.kind !== 'watch' && !exchange.discovery) this.#meter.afterSigterm(this.index);
    const stream = new Stream(connection, exchange);
    if (this.state === 'closing' && this.config.sendRetryAfter) {
      // WithRetryAfter: 429 + Retry-After: 5 + Connection: close, which Go's HTTP/2 server removes
      // from the response and turns into a GOAWAY: the client sees the GOAWAY and the body's words.
      connection.goawayAt = Math.min(connection.goawayAt, now + this.config.rttMs);
      this.#answer(stream, 429, SHUTDOWN_429_HEADERS, SHUTDOWN_429_BODY, this.config.rttMs);
      return undefined;
    }
    connection.add(stream);
    if (this.#busy + this.config.width[exchange.kind] <= this.config.seats && this.#queued === 0) {
      this.#serve(stream);
    } else if (this.#queued >= this.config.queueLimit) {
      this.#reject(stream);
    } else {
      stream.enqueuedAt = now;
      this.#queue.push(stream);
      this.#queued++;
      this.#armQueueTimer();
    }
    return stream;
  }

  /** The client gave up on a stream (abort, a watch moved): whatever it held is freed. */
  cancel(stream: Stream): void {
    const state = stream.state;
    if (state === 'done') return;
    stream.state = 'done';
    stream.connection.delete(stream);
    if (stream.timer) this.#clock.clearTimeout(stream.timer);
    if (state === 'queued') {
      this.#queued--;
    } else if (state === 'serving') {
      this.#release(stream.exchange.kind);
    } else {
      this.#watches.delete(stream);
      this.#discoveryWatches.delete(stream);
    }
  }

  // ── lifecycle ─────────────────────────────────────────────────────────────

  /** SIGTERM: `/readyz` fails now; NotAcceptingNewRequest after the hooks; exit after that. */
  terminate(then?: () => void): void {
    if (this.state !== 'ready' && this.state !== 'starting') return;
    this.terminatedAt = this.#clock.now();
    this.#setState('terminating');
    this.#clock.setTimeout(() => {
      if (this.state !== 'terminating') return;
      this.#setState('closing');
      if (!this.config.sendRetryAfter) {
        // http.Server.Shutdown: the listener closes and every connection gets GOAWAY.
        const now = this.#clock.now();
        for (const connection of this.#connections) {
          connection.goawaySentAt = Math.min(connection.goawaySentAt, now);
          connection.goawayAt = Math.min(connection.goawayAt, now + this.config.rttMs / 2);
        }
      }
      this.#clock.setTimeout(() => {
        if (this.state !== 'closing') return;
        this.crash();
        then?.();
      }, this.config.exitMs);
    }, this.config.hooksMs);
  }

  /** The process dies: every connection breaks (RST), nothing listens. */
  crash(): void {
    this.#setState('down');
    if (this.#queueTimer !== undefined) this.#clock.clearTimeout(this.#queueTimer);
    this.#queueTimer = undefined;
    for (const connection of this.#connections) {
      connection.open = false;
      for (const stream of connection.takeAll()) {
        if (stream.timer) this.#clock.clearTimeout(stream.timer);
        stream.state = 'done';
        this.#later(() => stream.exchange.failed('ECONNRESET'));
      }
    }
    this.#connections.clear();
    this.#watches.clear();
    this.#discoveryWatches.clear();
    this.#queue.length = 0;
    this.#queueHead = 0;
    this.#queued = 0;
    this.#busy = 0;
  }

  /** The process starts: it listens at once and turns ready after `startupMs` (watch cache filled, hooks done). */
  start(startupMs: number, then?: () => void): void {
    if (this.state !== 'down') return;
    this.cacheStart = this.#clock.now();
    this.#setState('starting');
    this.#clock.setTimeout(() => {
      if (this.state !== 'starting') return;
      this.#setState('ready');
      then?.();
    }, startupMs);
  }

  /** Virtual time it last became ready (0 for the servers ready from the start). */
  readySince = 0;
  /** Virtual time of its last SIGTERM (`/readyz` failing from then on). */
  terminatedAt = -Infinity;

  #setState(state: ApiserverState): void {
    const wasReady = this.ready;
    this.state = state;
    if (!wasReady && this.ready) this.readySince = this.#clock.now();
    if (wasReady !== this.ready) for (const listener of this.#readiness) listener();
  }

  // ── serving ───────────────────────────────────────────────────────────────

  #serve(stream: Stream): void {
    const kind = stream.exchange.kind;
    stream.state = 'serving';
    this.#busy += this.config.width[kind];
    const ms = this.config.serviceMs[kind] * this.slowFactor * (0.5 + this.#random());
    stream.timer = this.#clock.setTimeout(() => this.#served(stream), ms);
  }

  #served(stream: Stream): void {
    stream.timer = undefined;
    const exchange = stream.exchange;
    this.#release(exchange.kind);
    if (exchange.kind === 'watch') {
      if (exchange.since < this.cacheStart) {
        stream.state = 'done';
        stream.connection.delete(stream);
        this.#answer(stream, 410, {}, GONE_BODY, this.config.rttMs / 2);
        return;
      }
      stream.state = 'watching';
      (exchange.discovery ? this.#discoveryWatches : this.#watches).add(stream);
      this.#goaway(stream.connection);
      this.#deliver(stream, 200, NO_HEADERS, '');
      stream.timer = this.#clock.setTimeout(() => {
        stream.timer = undefined;
        this.cancel(stream);
        this.#later(() => exchange.ended());
      }, exchange.timeoutMs);
      return;
    }
    stream.state = 'done';
    stream.connection.delete(stream);
    this.#goaway(stream.connection);
    this.#deliver(stream, 200, NO_HEADERS, '');
  }

  /**
   * `--goaway-chance`: the filter sets `Connection: close` on this response, which Go's HTTP/2 server
   * deletes from the headers and turns into a GOAWAY (research/k8s.md §3.2).
   */
  #goaway(connection: Connection): void {
    if (this.config.goawayChance > 0 && this.#random() < this.config.goawayChance) {
      const now = this.#clock.now();
      connection.goawaySentAt = Math.min(connection.goawaySentAt, now);
      connection.goawayAt = Math.min(connection.goawayAt, now + this.config.rttMs / 2);
    }
  }

  /**
   * A response that leaves the server now. It reaches the client at once: the round trip matters
   * only where the two sides disagree about a connection (GOAWAY in flight), which `handle` models.
   */
  #deliver(stream: Stream, status: number, headers: Record<string, string>, body: string): void {
    stream.exchange.respond(status, headers, body);
  }

  #answer(stream: Stream, status: number, headers: Record<string, string>, body: string, ms: number): void {
    this.#clock.setTimeout(() => stream.exchange.respond(status, headers, body), ms);
  }

  #reject(stream: Stream): void {
    stream.state = 'done';
    stream.connection.delete(stream);
    const now = this.#clock.now();
    this.#retryAfter.dropped(now);
    this.#meter.rejected(this.index);
    this.#answer(stream, 429, { 'retry-after': String(this.#retryAfter.seconds), 'x-kubernetes-pf-prioritylevel-uid': 'workload-low' }, APF_429_BODY, this.config.rttMs);
  }

  #release(kind: RequestKind): void {
    this.#busy -= this.config.width[kind];
    this.#dequeue();
  }

  #dequeue(): void {
    const queue = this.#queue;
    while (this.#queued > 0 && this.#queueHead < queue.length) {
      const head = queue[this.#queueHead]!;
      if (head.state !== 'queued') {
        this.#queueHead++;
        continue;
      }
      if (this.#busy + this.config.width[head.exchange.kind] > this.config.seats) break;
      queue[this.#queueHead++] = undefined;
      this.#queued--;
      this.#serve(head);
    }
    if (this.#queueHead > 1024 && this.#queueHead * 2 > queue.length) {
      queue.splice(0, this.#queueHead);
      this.#queueHead = 0;
    }
  }

  /** Rejects queued requests that waited `queueWaitMs`, oldest first, at their deadline. */
  #armQueueTimer(): void {
    if (this.#queueTimer !== undefined) return;
    const head = this.#firstQueued();
    if (!head) return;
    this.#queueTimer = this.#clock.setTimeout(() => {
      this.#queueTimer = undefined;
      const now = this.#clock.now();
      for (;;) {
        const first = this.#firstQueued();
        if (!first || now - first.enqueuedAt < this.config.queueWaitMs) break;
        this.#queue[this.#queueHead++] = undefined;
        this.#queued--;
        this.#reject(first);
      }
      this.#armQueueTimer();
    }, head.enqueuedAt + this.config.queueWaitMs - this.#clock.now());
  }

  #firstQueued(): Stream | undefined {
    const queue = this.#queue;
    while (this.#queueHead < queue.length) {
      const head = queue[this.#queueHead];
      if (head && head.state === 'queued') return head;
      this.#queueHead++;
    }
    return undefined;
  }

  #later(fn: () => void, ms = this.config.rttMs / 2): void {
    this.#clock.setTimeout(fn, ms);
  }
}

const NO_HEADERS: Record<string, string> = {};
const SHUTDOWN_429_HEADERS: Record<string, string> = { 'retry-after': '5' };

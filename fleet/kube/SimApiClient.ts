import { EventEmitter } from 'node:events';
import type { GetOptions } from '../../src/resolver/ApiClient.ts';
import type { AppCall, Transport } from '../client/Transport.ts';
import type { RequestKind } from '../server/Apiserver.ts';
import type { EndpointSlices } from '../server/EndpointSlices.ts';
import type { Scheduler } from '../sim/Scheduler.ts';

/** What `EndpointSliceResolver` reads of a response: undici's `ResponseData`, as far as it goes. */
interface SimResponse {
  statusCode: number;
  body: SimBody;
}

/**
 * A response body: for a watch, the stream `readline` reads events from (plain synchronous events,
 * so that nothing waits for `process.nextTick`, which the simulation's microtask loop never lets
 * run); for a LIST or an error, its text.
 */
class SimBody extends EventEmitter {
  readonly #text: string;
  #destroyed = false;

  constructor(text = '') {
    super();
    this.#text = text;
  }

  json(): Promise<unknown> {
    return Promise.resolve(JSON.parse(this.#text));
  }

  text(): Promise<string> {
    return Promise.resolve(this.#text);
  }

  resume(): this {
    return this;
  }

  pause(): this {
    return this;
  }

  destroy(): void {
    this.#destroyed = true;
  }

  line(line: string): void {
    if (!this.#destroyed) this.emit('data', Buffer.from(`${line}\n`));
  }

  end(): void {
    if (!this.#destroyed) this.emit('end');
  }

  fail(error: Error): void {
    if (!this.#destroyed && this.listenerCount('error') > 0) this.emit('error', error);
  }
}

/**
 * Stands in for the library's `ApiClient` under the real `EndpointSliceResolver`: the resolver's
 * LIST and WATCH of `default/kubernetes` go to the bootstrap server — the `kubernetes` Service's
 * ClusterIP, through kube-proxy, so an L4 connection of its own (`transport`), pinned as the L4
 * strategy's are — and are answered from `EndpointSlices`. Timeouts are not modelled (no scenario
 * here leaves a request unanswered: refused and reset connections fail at once).
 */
export class SimApiClient {
  readonly #transport: Transport;
  readonly #slices: EndpointSlices;
  readonly #clock: Scheduler;

  constructor(transport: Transport, slices: EndpointSlices, clock: Scheduler) {
    this.#transport = transport;
    this.#slices = slices;
    this.#clock = clock;
  }

  get(path: string, options: GetOptions): Promise<SimResponse> {
    const query = new URLSearchParams(path.slice(path.indexOf('?') + 1));
    return new Promise<SimResponse>((resolve, reject) => {
      const call = new DiscoveryCall(this.#clock, this.#slices, query, resolve, reject);
      options.signal?.addEventListener('abort', () => call.abort(), { once: true });
      this.#transport.send(call);
    });
  }

  close(): Promise<void> {
    this.#transport.close();
    return Promise.resolve();
  }
}

/** One LIST or WATCH; every settled promise and event is a `touch` (its continuations must run). */
class DiscoveryCall implements AppCall {
  readonly kind: RequestKind;
  readonly since: number;
  readonly timeoutMs: number;
  readonly discovery = true;
  readonly #clock: Scheduler;
  readonly #slices: EndpointSlices;
  readonly #resolve: (response: SimResponse) => void;
  readonly #reject: (error: Error) => void;
  #body: SimBody | undefined;
  #settled = false;

  constructor(clock: Scheduler, slices: EndpointSlices, query: URLSearchParams, resolve: (response: SimResponse) => void, reject: (error: Error) => void) {
    const watch = query.get('watch') === '1';
    this.kind = watch ? 'watch' : 'list';
    this.since = Number(query.get('resourceVersion') ?? '0') || 0;
    this.timeoutMs = Number(query.get('timeoutSeconds') ?? '0') * 1000;
    this.#clock = clock;
    this.#slices = slices;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  answered(status: number): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#clock.touch();
    if (status !== 200) return this.#resolve({ statusCode: status, body: new SimBody(`{"kind":"Status","code":${status}}`) });
    if (this.kind === 'watch') {
      this.#body = new SimBody();
      return this.#resolve({ statusCode: 200, body: this.#body });
    }
    this.#resolve({ statusCode: 200, body: new SimBody(this.#slices.list()) });
  }

  event(line: string): void {
    this.#clock.touch();
    this.#body?.line(line);
  }

  watchEnded(): void {
    this.#clock.touch();
    this.#body?.end();
  }

  errored(): void {
    this.#clock.touch();
    const error = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    if (!this.#settled) {
      this.#settled = true;
      return this.#reject(error);
    }
    this.#body?.fail(error);
  }

  abort(): void {
    const error = new Error('aborted');
    if (!this.#settled) {
      this.#settled = true;
      return this.#reject(error);
    }
    this.#body?.fail(error);
  }
}

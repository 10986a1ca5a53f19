import { lookup as systemLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Clock, ClockTimer } from '../clock.ts';
import { unbracket } from '../net/hostnames.ts';
import { endpointSignature, LAST_RESORT, type EndpointAddress, type Resolver, type ResolverListener } from './Resolver.ts';

export type Lookup = (hostname: string) => Promise<ReadonlyArray<{ address: string }>>;

/** How often the name is looked up again; getaddrinfo gives no TTL. */
const REFRESH_MS = 60_000;
/** `refresh()` calls closer together than this are one lookup. */
const MIN_REFRESH_MS = 5_000;

/**
 * The addresses of one server URL (a kubeconfig's `server`), as the system resolver
 * (getaddrinfo: /etc/hosts, nsswitch, the VPN's DNS) sees them — what a direct connection to that
 * URL would use. An IP server is its own answer. Used as the last resort of a target chain.
 */
export class ServerResolver implements Resolver {
  readonly #host: string;
  readonly #port: number;
  /** An IP server is its own answer: nothing to look up. */
  readonly #literal: boolean;
  readonly #clock: Clock;
  readonly #lookup: Lookup;
  #listener: ResolverListener | undefined;
  #timer: ClockTimer | undefined;
  #lastLookup = -Infinity;
  #running = false;
  #published = '';
  #closed = false;

  constructor(server: URL, clock: Clock, lookup: Lookup = (hostname) => systemLookup(hostname, { all: true })) {
    this.#host = unbracket(server.hostname);
    this.#literal = isIP(this.#host) !== 0;
    this.#port = Number(server.port) || (server.protocol === 'http:' ? 80 : 443);
    this.#clock = clock;
    this.#lookup = lookup;
  }

  start(listener: ResolverListener): void {
    this.#listener = listener;
    if (this.#literal) {
      listener.endpoints([{ address: this.#host, port: this.#port, source: LAST_RESORT }]);
      return;
    }
    void this.#resolve();
  }

  refresh(): void {
    if (!this.#literal && this.#clock.now() - this.#lastLookup >= MIN_REFRESH_MS) void this.#resolve();
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
  }

  async #resolve(): Promise<void> {
    if (this.#running || this.#closed) return;
    this.#running = true;
    this.#lastLookup = this.#clock.now();
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    try {
      const answers = await this.#lookup(this.#host);
      if (this.#closed) return;
      const set: EndpointAddress[] = [...new Set(answers.map((a) => a.address))].map((address) => ({ address, port: this.#port, source: LAST_RESORT }));
      const signature = endpointSignature(set);
      if (set.length > 0 && signature !== this.#published) {
        this.#published = signature;
        this.#listener?.endpoints(set);
      }
    } catch (error) {
      if (!this.#closed) this.#listener?.error(error as Error);
    } finally {
      this.#running = false;
      if (!this.#closed) this.#timer = this.#clock.setTimeout(() => void this.#resolve(), REFRESH_MS);
    }
  }
}

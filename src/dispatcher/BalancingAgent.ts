import https, { type RequestOptions } from 'node:https';
import { isIPv6 } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { Endpoint } from '../balancer/Endpoint.ts';
import { classifyError } from '../health/classifyError.ts';
import { unbracket } from '../net/hostnames.ts';
import type { ChannelRequest } from '../observability/channels.ts';
import type { DescribedRequest } from './RequestHost.ts';
import type { AttemptOutcome, RetryReason } from '../health/outcome.ts';
import { type BalancerInternals, balancerInternals } from './internals.ts';
import { tlsConnectOptions } from '../net/tls.ts';

type Callback = (error: Error | null, socket: Duplex) => void;

/**
 * An `https.Agent` for code that speaks through Node's http stack rather than undici —
 * client-node's WebSockets (exec, attach, port-forward, cp) and its ProtoClient. Each connection
 * goes to an endpoint the balancer picks (an upgrade counts as a long-running stream, placed where
 * the fewest are open), verified against the balancer's name for the origin, never the dialled
 * address. A connection refused, timed out or failing TLS is tried on another endpoint (nothing was
 * sent) and reported to that endpoint's health, as are streams that break. Connections are not
 * kept alive: an upgraded socket belongs to its stream anyway. Origins the balancer does not
 * balance connect as a plain `https.Agent` would.
 */
export class BalancingAgent extends https.Agent {
  readonly #balancer: BalancerInternals;

  /** `balancer`: a `Balancer` (its internals are looked up, so any other dispatcher throws). */
  constructor(balancer: object) {
    super({ keepAlive: false });
    this.#balancer = balancerInternals(balancer);
  }

  override createConnection(options: RequestOptions, callback?: Callback): Duplex | null | undefined {
    const host = unbracket(String(options.hostname ?? options.host ?? 'localhost'));
    const origin = new URL(`https://${isIPv6(host) ? `[${host}]` : host}:${options.port ?? 443}`);
    if (!this.#balancer.balances(origin) || !callback) return super.createConnection(options, callback);
    new Connection(this.#balancer, origin, options, isUpgrade(options.headers), callback).start();
    return undefined;
  }
}

/**
 * Whether the request asks for an upgrade: headers as an object (client-node), or as a flat list of
 * names and values (the proxy's, which keeps repeated headers): a list's indexes are not names.
 */
function isUpgrade(headers: RequestOptions['headers']): boolean {
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) if (String(headers[i]).toLowerCase() === 'upgrade') return true;
    return false;
  }
  return Object.entries(headers ?? {}).some(([name, value]) => name.toLowerCase() === 'upgrade' && value !== undefined);
}

/** One connection across its attempts, each on another endpoint. */
class Connection implements DescribedRequest {
  readonly #balancer: BalancerInternals;
  readonly #origin: URL;
  readonly #options: RequestOptions;
  readonly #longRunning: boolean;
  readonly #callback: Callback;
  readonly #tried = new Set<Endpoint>();

  constructor(balancer: BalancerInternals, origin: URL, options: RequestOptions, longRunning: boolean, callback: Callback) {
    this.#balancer = balancer;
    this.#origin = origin;
    this.#options = options;
    this.#longRunning = longRunning;
    this.#callback = callback;
  }

  start(): void {
    this.#balancer.host.totals.requests++;
    this.#balancer.host.budget.requests++;
    this.#attempt(undefined, undefined);
  }

  #attempt(previous: Endpoint | undefined, failure: { reason: RetryReason; error: Error } | undefined): void {
    const host = this.#balancer.host;
    const retry = previous !== undefined;
    const endpoint = host.pick(this.#longRunning, false, this.#tried.size > 0 ? this.#tried : undefined);
    if (!endpoint || (retry && !host.budget.tryAcquire())) return this.#fail(failure?.error ?? host.noEndpoints());
    if (previous && failure) host.retrying(previous, endpoint, failure.reason, this.#tried.size + 1, this);
    this.#tried.add(endpoint);
    host.attemptStarted(endpoint, this.#longRunning, this, this.#tried.size);
    const socket = tlsConnect(this.#tlsOptions(endpoint));
    let connected = false;
    let settled = false;
    const settle = (outcome: AttemptOutcome): void => {
      if (settled) return;
      settled = true;
      if (retry) host.budget.release();
      host.attemptEnded(endpoint, this.#longRunning, outcome);
    };
    const timer = setTimeout(() => {
      socket.destroy(Object.assign(new Error(`connect timeout after ${this.#balancer.connectTimeout} ms`), { code: 'UND_ERR_CONNECT_TIMEOUT' }));
    }, this.#balancer.connectTimeout);
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      connected = true;
      host.budget.requests--;
      this.#callback(null, socket);
    });
    let broken: Error | undefined;
    socket.on('error', (error: Error) => {
      clearTimeout(timer);
      if (connected) {
        broken ??= error;
        return;
      }
      const kind = classifyError(error);
      settle({ type: 'error', kind, error });
      if ((kind === 'connect' || kind === 'tls') && this.#tried.size < host.maxAttempts) return this.#attempt(endpoint, { reason: kind, error });
      this.#fail(error);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      if (!connected) return;
      const kind = broken ? classifyError(broken) : undefined;
      // The stream ended: as far as health can tell from a socket, it was served (an upgrade is a 101).
      settle(broken && kind !== 'aborted' ? { type: 'error', kind: kind ?? 'other', error: broken } : { type: 'response', statusCode: 101, headers: {}, body: '', eviction: false });
    });
  }

  #tlsOptions(endpoint: Endpoint): ConnectionOptions {
    const { verification, tls } = this.#balancer.tlsFor(this.#origin);
    const o = this.#options;
    return {
      ...tlsConnectOptions(tls, verification),
      // What the caller passed for this request (client-node: the kubeconfig's, read just now) wins.
      ca: o.ca ?? tls.ca,
      cert: o.cert ?? tls.cert,
      key: o.key ?? tls.key,
      ...(o.pfx !== undefined ? { pfx: o.pfx, passphrase: o.passphrase } : {}),
      // Verification is off only if the kubeconfig (through the caller or the balancer) says so.
      rejectUnauthorized: o.rejectUnauthorized !== false && tls.rejectUnauthorized,
      host: endpoint.address,
      port: endpoint.port,
      ALPNProtocols: ['http/1.1'],
    } as ConnectionOptions;
  }

  /** Node hands a connection no request path (it sets `path` to null): the message's is empty. */
  describe(): ChannelRequest {
    return { method: this.#options.method ?? 'GET', path: this.#options.path ?? '', origin: this.#origin.origin };
  }

  #fail(error: Error): void {
    this.#balancer.host.totals.failed++;
    this.#balancer.host.budget.requests--;
    this.#callback(error, undefined as unknown as Duplex);
  }
}

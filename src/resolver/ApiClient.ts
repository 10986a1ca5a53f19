import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Client, type Dispatcher, type buildConnector } from 'undici';
import { type ResolvedTls, tlsConnectOptions, verificationFor } from '../net/tls.ts';
import { unbracket } from '../net/hostnames.ts';
import type { HeadersSource } from '../net/headers.ts';

export interface ApiAccess {
  /** The bootstrap server; a path prefix (an API proxy's) is kept. */
  server: URL;
  headers: HeadersSource;
  /** The TLS settings in force now: credentials may rotate between connections. */
  tls: () => ResolvedTls;
  connectTimeout?: number;
}

export interface GetOptions {
  headersTimeout: number;
  bodyTimeout: number;
  signal?: AbortSignal;
}

/**
 * A small client for the bootstrap server, for the resolver's own API requests (never balanced:
 * it must work before any endpoint is known). Its one connection never keeps the process alive: a
 * script that is done with the API exits even though the resolver still watches.
 */
export class ApiClient {
  readonly #access: ApiAccess;
  readonly #client: Client;
  readonly #prefix: string;

  constructor(access: ApiAccess) {
    this.#access = access;
    this.#prefix = access.server.pathname.replace(/\/+$/, '');
    this.#client = new Client(access.server.origin, {
      allowH2: false,
      keepAliveTimeout: 30_000,
      connect: (options, callback) => this.#connect(options.hostname, Number(options.port), callback),
    });
  }

  async get(path: string, options: GetOptions): Promise<Dispatcher.ResponseData> {
    const source = this.#access.headers;
    const credentials = typeof source === 'function' ? await source() : source;
    return this.#client.request({
      path: this.#prefix + path,
      method: 'GET',
      headers: { ...credentials, accept: 'application/json', 'user-agent': 'kube-balancer' },
      headersTimeout: options.headersTimeout,
      bodyTimeout: options.bodyTimeout,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }

  async close(): Promise<void> {
    await this.#client.destroy();
  }

  #connect(hostname: string, port: number, callback: buildConnector.Callback): void {
    const server = this.#access.server;
    const host = unbracket(hostname);
    // One snapshot per connection: the credentials and the name they are verified against agree.
    const tls = server.protocol === 'https:' ? this.#access.tls() : undefined;
    const socket = tls
      ? tlsConnect({ host, port, ...tlsConnectOptions(tls, verificationFor(server, tls)), ALPNProtocols: ['http/1.1'] })
      : netConnect({ host, port });
    // undici refs the socket while a request is pending; the watch always is.
    socket.unref();
    socket.ref = () => socket;
    let settled = false;
    const settle = (error: Error | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.off('error', settle);
      if (error) {
        socket.destroy();
        callback(error, null);
      } else {
        callback(null, socket);
      }
    };
    const timer = setTimeout(() => settle(Object.assign(new Error('connect timeout'), { code: 'UND_ERR_CONNECT_TIMEOUT' })), this.#access.connectTimeout ?? 10_000);
    timer.unref();
    socket.once('error', settle);
    socket.once(tls ? 'secureConnect' : 'connect', () => settle(null));
  }
}

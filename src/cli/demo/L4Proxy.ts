import net from 'node:net';

/** Where the proxy can send a connection: an apiserver of the demo. */
export interface Backend {
  readonly instance: { readonly host: string; readonly port: number };
}

/**
 * The L4 load balancer in front of the apiservers for the one-connection client: what haproxy
 * `mode tcp` (with `option redispatch`), IPVS or a cloud NLB does. It picks an apiserver per TCP
 * connection, round robin, moving on to the next when one refuses the connection, and then only
 * copies bytes: TLS and HTTP/2 run end to end, so every request on that connection goes to that
 * apiserver until the connection ends.
 */
export class L4Proxy<Apiserver extends Backend = Backend> {
  readonly #apiservers: readonly Apiserver[];
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  /** Client connections open now, per apiserver. */
  readonly #open = new Map<Apiserver, number>();
  #next = 0;

  private constructor(apiservers: readonly Apiserver[]) {
    this.#apiservers = apiservers;
    this.#server = net.createServer({ noDelay: true }, (socket) => this.#accept(socket));
  }

  static async start<A extends Backend>(apiservers: readonly A[]): Promise<L4Proxy<A>> {
    const proxy = new L4Proxy(apiservers);
    await new Promise<void>((resolve, reject) => {
      proxy.#server.once('error', reject);
      proxy.#server.listen({ host: '127.0.0.1', port: 0 }, () => resolve());
    });
    return proxy;
  }

  get url(): string {
    const { port } = this.#server.address() as net.AddressInfo;
    return `https://127.0.0.1:${port}`;
  }

  /** The apiserver with the most client connections through the proxy now, if any. */
  get busiest(): Apiserver | undefined {
    let best: Apiserver | undefined;
    for (const [apiserver, n] of this.#open) if (n > 0 && (!best || n > this.#open.get(best)!)) best = apiserver;
    return best;
  }

  /** Client connections open through the proxy to `apiserver` now. */
  connections(apiserver: Apiserver): number {
    return this.#open.get(apiserver) ?? 0;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: net.Socket): void {
    this.#track(client);
    client.on('error', () => {});
    client.pause();
    this.#connect(client, 0);
  }

  /** Tries the next apiserver; after every one refused, the client's connection is reset. */
  #connect(client: net.Socket, tried: number): void {
    if (tried >= this.#apiservers.length || client.destroyed) {
      client.resetAndDestroy();
      return;
    }
    const apiserver = this.#apiservers[this.#next++ % this.#apiservers.length]!;
    const upstream = net.connect({ host: apiserver.instance.host, port: apiserver.instance.port, noDelay: true });
    this.#track(upstream);
    let connected = false;
    upstream.on('error', () => {
      if (!connected) this.#connect(client, tried + 1);
    });
    upstream.once('connect', () => {
      connected = true;
      this.#open.set(apiserver, this.connections(apiserver) + 1);
      let counted = true;
      const end = (reset: boolean): void => {
        if (counted) this.#open.set(apiserver, this.connections(apiserver) - 1);
        counted = false;
        // A reset stays a reset on the other side: a crash must look like one to the client.
        if (reset) {
          client.resetAndDestroy();
          upstream.resetAndDestroy();
        } else {
          client.destroySoon();
          upstream.destroySoon();
        }
      };
      upstream.once('close', (hadError) => end(hadError));
      client.once('close', (hadError) => end(hadError));
      upstream.pipe(client);
      client.pipe(upstream);
      client.resume();
    });
  }

  #track(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }
}

// The one-connection baseline's L4 proxy (haproxy `mode tcp` reduced): each client connection is
// piped, bytes untouched, to one backend, the next listening one in a seeded order; a backend that
// refuses is skipped, as haproxy's redispatch does. It never looks inside, so TLS ends at the apiserver.
import net, { type AddressInfo } from 'node:net';
import type { Random } from '../fleet/sim/random.ts';

export class TcpProxy {
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  /** Backend index each connection was given, in order. */
  readonly pinned: number[] = [];

  private constructor(backends: readonly { host: string; port: number }[], random: Random) {
    this.#server = net.createServer((client) => {
      this.#track(client);
      client.pause();
      const start = Math.floor(random() * backends.length);
      const tryBackend = (n: number): void => {
        if (n >= backends.length || client.destroyed) return void client.destroy();
        const index = (start + n) % backends.length;
        const upstream = net.connect(backends[index]!);
        this.#track(upstream);
        upstream.once('error', () => tryBackend(n + 1));
        upstream.once('connect', () => {
          this.pinned.push(index);
          upstream.removeAllListeners('error');
          // An error on one side closes the other. Not resetAndDestroy(): on Node 22 a socket reset
          // that way while its peer is closing can stay an active handle for good (seen here, 1 run in 5).
          upstream.on('error', () => client.destroy());
          client.on('error', () => upstream.destroy());
          upstream.on('close', () => client.destroy());
          client.on('close', () => upstream.destroy());
          client.pipe(upstream);
          upstream.pipe(client);
          client.resume();
        });
      };
      client.on('error', () => {});
      tryBackend(0);
    });
  }

  static async start(backends: readonly { host: string; port: number }[], random: Random): Promise<TcpProxy> {
    const proxy = new TcpProxy(backends, random);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  #track(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }
}

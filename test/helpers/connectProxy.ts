import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

/** A minimal HTTP CONNECT proxy that counts its tunnels and where they went. */
export async function connectProxy(): Promise<{ url: string; tunnels: string[]; close(): Promise<void> }> {
  const tunnels: string[] = [];
  const sockets = new Set<net.Socket>();
  const proxy = http.createServer((_req, res) => res.writeHead(405).end());
  proxy.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    tunnels.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = net.connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(client).add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    tunnels,
    close: async () => {
      // Tunnels leave the HTTP server's bookkeeping: close them by hand.
      for (const socket of sockets) socket.destroy();
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    },
  };
}

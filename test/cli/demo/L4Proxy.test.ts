// The demo's L4 load balancer on real sockets: round robin per connection, the next backend when one
// refuses, bytes copied both ways, a reset passed on as a reset.
import { once } from 'node:events';
import net from 'node:net';
import test from 'ava';
import { L4Proxy } from '../../../src/cli/demo/L4Proxy.ts';

interface Echo {
  name: string;
  instance: { host: string; port: number };
  server: net.Server;
  sockets: Set<net.Socket>;
}

/** A backend that answers each line with its name and the line. */
async function echo(name: string): Promise<Echo> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.on('data', (chunk) => socket.write(`${name}:${chunk.toString()}`));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { name, instance: { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port }, server, sockets };
}

async function ask(proxy: L4Proxy, text: string): Promise<{ socket: net.Socket; answer: string }> {
  const socket = net.connect(Number(new URL(proxy.url).port), '127.0.0.1');
  socket.write(text);
  const [chunk] = (await once(socket, 'data')) as [Buffer];
  return { socket, answer: chunk.toString() };
}

test('round robin per connection; a refusing backend is skipped; connections counted per backend; a reset stays a reset', async (t) => {
  const backends = await Promise.all(['a', 'b', 'c'].map(echo));
  const proxy = await L4Proxy.start(backends);
  const open: net.Socket[] = [];
  try {
    const first = await ask(proxy, 'x');
    const second = await ask(proxy, 'y');
    open.push(first.socket, second.socket);
    t.deepEqual([first.answer, second.answer], ['a:x', 'b:y']);
    t.deepEqual(backends.map((b) => proxy.connections(b)), [1, 1, 0]);
    // Every request on a connection goes where the connection went.
    first.socket.write('again');
    t.is(((await once(first.socket, 'data')) as [Buffer])[0].toString(), 'a:again');

    // c refuses connections now: the next connection goes on to a.
    await new Promise<void>((resolve) => backends[2]!.server.close(() => resolve()));
    const third = await ask(proxy, 'z');
    open.push(third.socket);
    t.is(third.answer, 'a:z');
    t.is(proxy.busiest, backends[0]);

    // b resets its connection: the client sees a reset, not a clean end.
    const closed = new Promise((resolve) => second.socket.once('close', resolve));
    const error = once(second.socket, 'error');
    for (const s of backends[1]!.sockets) s.resetAndDestroy();
    t.is(((await error) as [NodeJS.ErrnoException])[0].code, 'ECONNRESET');
    await closed;
    t.is(proxy.connections(backends[1]!), 0);
  } finally {
    for (const s of open) s.destroy();
    await proxy.close();
    await Promise.all(backends.map((b) => new Promise((resolve) => b.server.close(resolve))));
  }
});

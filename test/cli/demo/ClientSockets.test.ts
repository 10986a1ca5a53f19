// The demo's view of this process's client sockets, on real sockets: a socket whose peer has just
// reset it counts as open until this process has read the reset.
import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import test from 'ava';
import { ClientSockets } from '../../../src/cli/demo/ClientSockets.ts';

test('closedTo() waits for a socket the server has just reset (its RST in the kernel, not read yet) to close, and no longer', async (t) => {
  const accepted: net.Socket[] = [];
  const server = net.createServer((socket) => void accepted.push(socket));
  server.listen(0, '127.0.0.2');
  await once(server, 'listening');
  const authority = `127.0.0.2:${(server.address() as AddressInfo).port}`;
  const sockets = new ClientSockets();
  try {
    const client = net.connect((server.address() as AddressInfo).port, '127.0.0.2');
    const reset = once(client, 'error');
    await once(client, 'connect');
    while (accepted.length === 0) await new Promise((resolve) => setImmediate(resolve));
    // Nothing here reads the client's remoteAddress first: Node would keep it, and the bug would hide.
    // Like a crashed apiserver: the RST is in the client's kernel at once, and this process reads it later.
    accepted[0]!.resetAndDestroy();
    const closed = await sockets.closedTo(authority, 10_000);
    t.true(closed);
    t.true(client.destroyed, 'closedTo() returned only once the client had read its reset');
    t.like((await reset)[0], { code: 'ECONNRESET' });
    t.true(await sockets.closedTo('127.0.0.3:1', 0), 'nothing open to an authority never connected to');
  } finally {
    sockets.close();
    server.close();
  }
});

/* global console */
// undici 8.13.1, plain Pool, no kube-balancer: a server that answers a plain GET with a bare
// `HTTP/1.1 101 Switching Protocols` (no `connection: upgrade`) makes the request fail with
// undici's own AssertionError (`assert(upgrade)` in lib/dispatcher/client-h1.js onUpgrade): llhttp
// returns PAUSED_UPGRADE for any 101, while undici sets its upgrade flag only from the headers. With
// `connection: upgrade` + `upgrade:` the same answer gets a clean SocketError('bad upgrade').
// Draft upstream report: "client-h1: bare 101 response to a non-upgrade request fails with
// AssertionError instead of SocketError('bad upgrade')". Run: npx node bench/repro/h1-bare-101-assert.mjs
import net from 'node:net';
import { once } from 'node:events';
import { Pool, request } from 'undici';

for (const answer of ['HTTP/1.1 101 Switching Protocols\r\n\r\n', 'HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: h2c\r\n\r\n']) {
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => socket.write(answer));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${server.address().port}`;
  const pool = new Pool(origin);
  try {
    const res = await request(`${origin}/`, { dispatcher: pool });
    console.log(JSON.stringify(answer), '->', res.statusCode);
    await res.body.dump();
  } catch (error) {
    console.log(JSON.stringify(answer), '->', error.name, error.code, error.message.split('\n')[0]);
  } finally {
    await pool.destroy();
    server.close();
  }
}

// Issue 12, defect 6: over TLS 1.2 a client sends its certificate before it has judged the
// server's, so an endpoint with a foreign certificate would still receive it. With a client
// certificate configured, handshakes are TLS 1.3 only, where the certificate goes encrypted and
// only after the server's certificate has been verified.
import type { AddressInfo } from 'node:net';
import { createServer, type TLSSocket } from 'node:tls';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { createBalancer } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';

test('a foreign-CA endpoint limited to TLS 1.2 that asks for a client certificate never gets it', async (t) => {
  const presented: string[] = [];
  let clientErrors = 0;
  const server = createServer({ ...certs.foreign, maxVersion: 'TLSv1.2', requestCert: true, rejectUnauthorized: false }, (socket: TLSSocket) => {
    const peer = socket.getPeerCertificate();
    if (peer && Object.keys(peer).length > 0) presented.push(String(peer.subject?.CN ?? 'a certificate'));
    socket.destroy();
  });
  server.on('tlsClientError', () => clientErrors++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
  const port = (server.address() as AddressInfo).port;
  const balancer = createBalancer({
    target: `static:///127.0.0.2:${port}`,
    origin: ORIGIN,
    tls: { ca: certs.ca, cert: certs.client.cert, key: certs.client.key },
    probe: false,
  });
  try {
    for (let i = 0; i < 3; i++) {
      await t.throwsAsync(undici.request(`${ORIGIN}/api`, { dispatcher: balancer }).then((res) => res.body.dump()));
    }
    t.deepEqual(presented, []);
    t.true(clientErrors >= 1, 'the handshake failed on the protocol version, before any certificate');
  } finally {
    await balancer.close();
    server.close();
  }
});

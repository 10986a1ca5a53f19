// Every endpoint out at once must not fail a read that could still be tried (chaos, seed 1
// schedule 6: two apiservers restarted but still ejected as unreachable, the third reset a LIST's
// stream, and the LIST failed after one attempt of three while both restarted ones served).
import { constants as h2, type Http2ServerResponse } from 'node:http2';
import test from 'ava';
import * as undici from 'undici';
import { sendJson, type TestServer } from '../../fixtures/server/TestServer.ts';
import { cluster, ORIGIN } from '../helpers/balancer.ts';

test('a retry that tried every ready endpoint goes to one ejected as unreachable (a restarted apiserver) rather than fail', async (t) => {
  let resetOn: TestServer | undefined;
  const { servers, balancer, close } = await cluster(
    { probe: false, maxAttempts: 3 },
    {
      handler: (_req, res, server) => {
        if (server === resetOn) (res as Http2ServerResponse).stream.close(h2.NGHTTP2_INTERNAL_ERROR);
        else sendJson(res, 200, { server: server.name });
      },
    },
  );
  const [a, b, c] = servers as [TestServer, TestServer, TestServer];
  try {
    await a.crash();
    await b.crash();
    // Reads find both refused and retry on c; health takes them out as unreachable.
    for (let k = 0; k < 20 && balancer.endpoints().filter((e) => e.state === 'ejected').length < 2; k++) {
      await (await undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer })).body.dump();
    }
    t.deepEqual(balancer.endpoints().map((e) => e.state), ['ejected', 'ejected', 'ready']);
    await a.restart();
    await b.restart();
    resetOn = c;
    const res = await undici.request(`${ORIGIN}/api/v1/pods`, { dispatcher: balancer });
    t.is(res.statusCode, 200);
    const body = (await res.body.json()) as { server: string };
    t.true([a.name, b.name].includes(body.server), body.server);
  } finally {
    await close();
  }
});

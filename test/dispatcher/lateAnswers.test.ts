// An answer that comes after its request was abandoned (the caller aborted it, or the balancer moved
// it off a silent endpoint) must not crash the process when the balancer closes: Node makes an
// orphan HTTP/2 stream for headers on a stream it already dropped, and destroying the session
// errored that stream with no listener (the slow-start test on a fake clock, after undici's close).
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import * as undici from 'undici';
import { certs } from '../../fixtures/certs/index.ts';
import { sendJson, startServers, staticTarget, type Response } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

for (const end of ['close', 'destroy'] as const) {
  test(`an answer to an aborted GET that comes later leaves nothing to crash the balancer's ${end}()`, async (t) => {
    const held: Response[] = [];
    const [server] = await startServers(['127.0.0.2'], {
      handler: (req, res) => {
        if (req.url?.startsWith('/late')) held.push(res);
        else sendJson(res, 200, { ok: true });
      },
    });
    const balancer = createBalancer({ origin: ORIGIN, target: staticTarget([server!]), tls: { ca: certs.ca }, probe: false, hedge: false });
    const uncaught: Error[] = [];
    const record = (error: Error): void => void uncaught.push(error);
    process.on('uncaughtException', record);
    try {
      // The connection is up and idle-free: a GET keeps it busy while the late one is abandoned.
      await (await undici.request(`${ORIGIN}/version`, { dispatcher: balancer })).body.dump();
      // Aborted at every moment around the send: undici's abort before the stream's write side
      // finished left the stream open at the server (no RST_STREAM) with nobody to own its answer.
      const lates = Array.from({ length: 40 }, async (_, k) => {
        const controller = new AbortController();
        const late = undici.request(`${ORIGIN}/late/${k}`, { dispatcher: balancer, signal: controller.signal });
        if (k % 4 === 0) queueMicrotask(() => controller.abort());
        else if (k % 4 === 1) setImmediate(() => controller.abort());
        else setTimeout(() => controller.abort(), k % 4);
        await late.then((res) => res.body.dump(), () => {});
      });
      await Promise.all(lates);
      await until(() => held.length > 0, { what: 'the server to hold some GETs' });
      await sleep(50);
      // The server answers what the client dropped: headers first, then part of a body.
      for (const res of held) {
        (res as unknown as { writeHead: (s: number) => void }).writeHead(200);
        (res as unknown as { write: (b: string) => void }).write('{"late":');
      }
      await sleep(100);
      if (end === 'close') await balancer.close();
      else await balancer.destroy();
      await sleep(100);
      t.deepEqual(uncaught.map((e) => e.message), []);
    } finally {
      process.off('uncaughtException', record);
      for (const res of held) res.end();
      await balancer.close().catch(() => {});
      await server!.close();
    }
  });
}

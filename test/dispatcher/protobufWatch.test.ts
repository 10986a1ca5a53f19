// Watch streams framed by their content type, over real sockets: protobuf watches (length-prefixed
// binary, where 0x0A is an ordinary byte) end cleanly at a frame boundary, JSON watches at a line,
// and any other type passes through unchanged, its broken connection an error.
import type { ServerResponse } from 'node:http';
import test from 'ava';
import * as undici from 'undici';
import { ApiserverCluster, RESOURCES } from '../../fixtures/apiserver/index.ts';
import { PROTOBUF_WATCH, decodeWatchStream, watchFrame } from '../../fixtures/apiserver/protobuf.ts';
import { certs } from '../../fixtures/certs/index.ts';
import { startServers, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../../src/index.ts';
import { ORIGIN } from '../helpers/balancer.ts';
import { until } from '../helpers/poll.ts';

const WATCH = '/api/v1/namespaces/default/configmaps?watch=true';
const configMap = (name: string, rv: number) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', resourceVersion: String(rv) }, data: { text: 'one\ntwo\n' } });
const FIRST = watchFrame('ADDED', configMap('a', 1));
const SECOND = watchFrame('MODIFIED', configMap('a', 2));

/** One server that answers every watch with `contentType`, writes `chunks`, and holds the stream open. */
async function server(contentType: string, chunks: Buffer[]): Promise<TestServer> {
  const [s] = await startServers(['127.0.0.2'], {
    handler: (_req, res) => {
      (res as ServerResponse).writeHead(200, { 'content-type': contentType });
      for (const chunk of chunks) (res as ServerResponse).write(chunk);
    },
  });
  return s!;
}

async function watchThrough(s: TestServer, headers: Record<string, string> = {}) {
  const balancer = createBalancer({ origin: ORIGIN, target: `static:///${s.authority}`, tls: { ca: certs.ca }, probe: false });
  const res = await undici.request(`${ORIGIN}${WATCH}`, { dispatcher: balancer, headers });
  const received: Buffer[] = [];
  res.body.on('data', (chunk: Buffer) => received.push(chunk));
  const ended = new Promise<'end' | Error>((resolve) => res.body.once('end', () => resolve('end')).once('error', resolve));
  return { balancer, res, bytes: () => Buffer.concat(received), ended };
}

test('a protobuf watch: each frame is passed on as soon as it is whole, and a crash mid-frame ends the stream cleanly after the last whole one', async (t) => {
  const s = await server(PROTOBUF_WATCH, [FIRST, SECOND.subarray(0, 9)]);
  const { balancer, bytes, ended } = await watchThrough(s);
  try {
    await until(() => bytes().length >= FIRST.length, { what: 'the first frame' });
    t.deepEqual(bytes(), FIRST, 'the first frame, whole, and nothing of the second');
    await s.crash();
    t.is(await ended, 'end', 'a clean end, not an error');
    t.deepEqual(bytes(), FIRST);
    t.like(decodeWatchStream(bytes())[0], { type: 'ADDED', kind: 'ConfigMap', name: 'a', resourceVersion: '1' });
    t.like(balancer.endpoints()[0], { streams: 0, failures: 1 });
  } finally {
    await balancer.close();
    await s.close();
  }
});

test('a watch of another content type is passed through unchanged at once, and its broken connection is an error', async (t) => {
  // CBOR sequence items: no newline anywhere, no length prefix kube-balancer could trust.
  const items = Buffer.from([0xd9, 0xd9, 0xf7, 0xa2, 0x64, 0x74, 0x79, 0x70, 0x65]);
  const s = await server('application/cbor-seq', [items]);
  const { balancer, bytes, ended } = await watchThrough(s);
  try {
    await until(() => bytes().length === items.length, { what: 'the bytes, unframed' });
    t.deepEqual(bytes(), items);
    await s.crash();
    const end = await ended;
    t.true(end instanceof Error, 'no boundary promise, so no clean end');
  } finally {
    await balancer.close();
    await s.close();
  }
});

test('the simulator serves protobuf watches to clients that accept them; through the balancer every frame decodes, and a crash ends the watch cleanly', async (t) => {
  const cluster = await ApiserverCluster.start({ hosts: ['127.0.0.2'] });
  const [instance] = cluster.instances;
  const balancer = createBalancer({ origin: `https://kubernetes.default.svc:${cluster.port}`, target: cluster.target, tls: { ca: certs.ca }, probe: false });
  try {
    const url = `${instance!.url.replace(/127\.0\.0\.\d+/, 'kubernetes.default.svc')}${WATCH}`;
    const res = await undici.request(url, { dispatcher: balancer, headers: { ...cluster.authHeaders, accept: 'application/vnd.kubernetes.protobuf, */*' } });
    t.is(res.headers['content-type'], PROTOBUF_WATCH);
    const received: Buffer[] = [];
    res.body.on('data', (chunk: Buffer) => received.push(chunk));
    const ended = new Promise<'end' | Error>((resolve) => res.body.once('end', () => resolve('end')).once('error', resolve));
    // Values full of newlines, large enough to span TCP segments.
    const big = 'line\n'.repeat(20_000);
    for (let i = 0; i < 5; i++) cluster.store.create(RESOURCES.configmaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: 'default' }, data: { big } });
    const whole = (): number => {
      try {
        return decodeWatchStream(Buffer.concat(received)).length;
      } catch {
        return 0; // a frame still on its way
      }
    };
    await until(() => whole() === 5, { what: 'five whole frames' });
    await instance!.crash();
    t.is(await ended, 'end');
    const events = decodeWatchStream(Buffer.concat(received));
    t.deepEqual(events.map((e) => `${e.type} ${e.kind} ${e.name}`), [0, 1, 2, 3, 4].map((i) => `ADDED ConfigMap cm-${i}`));
    t.is(events[4]!.data.big, big);
  } finally {
    await balancer.close();
    await cluster.close();
  }
});

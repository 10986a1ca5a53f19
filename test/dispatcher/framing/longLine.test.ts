// One JSON watch event on one long line (a large CRD, managedFields-heavy objects) costs linear
// work: the line framer copies and scans each byte a bounded number of times, not once per chunk.
import type { ServerResponse } from 'node:http';
import test from 'ava';
import * as undici from 'undici';
import { APISERVER_NAME, certs } from '../../../fixtures/certs/index.ts';
import { startServers } from '../../../fixtures/server/TestServer.ts';
import { LineFramer } from '../../../src/dispatcher/framing/LineFramer.ts';
import { createBalancer } from '../../../src/index.ts';
import { ORIGIN } from '../../helpers/balancer.ts';

const MiB = 1024 * 1024;
const WATCH = '/api/v1/namespaces/default/configmaps?watch=true';

/** One watch event of about `size` bytes, ending in its newline. */
function longEvent(size: number): Buffer {
  const head = '{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","resourceVersion":"7"},"data":{"blob":"';
  const foot = '"}}}\n';
  return Buffer.from(head + 'x'.repeat(size - head.length - foot.length) + foot);
}

test.serial('the line framer copies and scans a 16 MiB line a bounded number of times, in 16 KiB chunks', (t) => {
  const event = longEvent(16 * MiB);
  const stream = Buffer.concat([event, Buffer.from('{"type":"MODIFIED"')]);
  // Counts the bytes each Buffer operation the framer may use touches; stops at once past the bound,
  // so a quadratic framer fails in a moment instead of after a minute.
  const bound = 4 * stream.length;
  let work = 0;
  const count = (bytes: number): void => {
    work += bytes;
    if (work > bound) throw new Error(`over ${bound} bytes copied or scanned`);
  };
  const concat = Buffer.concat.bind(Buffer);
  const from = Buffer.from.bind(Buffer) as (...args: unknown[]) => Buffer;
  const proto = Buffer.prototype as { lastIndexOf: (...args: unknown[]) => number; indexOf: (...args: unknown[]) => number };
  const { lastIndexOf, indexOf } = proto;
  Buffer.concat = (list: readonly Uint8Array[], length?: number) => {
    const out = concat(list, length);
    count(out.length);
    return out;
  };
  (Buffer as { from: unknown }).from = (...args: unknown[]) => {
    const out = from(...args);
    if (args[0] instanceof Uint8Array) count(out.length);
    return out;
  };
  proto.lastIndexOf = function (this: Buffer, ...args: unknown[]) {
    count(this.length);
    return lastIndexOf.apply(this, args);
  };
  proto.indexOf = function (this: Buffer, ...args: unknown[]) {
    count(this.length);
    return indexOf.apply(this, args);
  };
  const outputs: Buffer[] = [];
  let rest: Buffer | undefined;
  try {
    const framer = new LineFramer();
    for (let at = 0; at < stream.length; at += 16 * 1024) {
      const out = framer.push(stream.subarray(at, at + 16 * 1024));
      if (out) outputs.push(out);
    }
    rest = framer.rest();
  } finally {
    Buffer.concat = concat;
    (Buffer as { from: unknown }).from = from;
    proto.lastIndexOf = lastIndexOf;
    proto.indexOf = indexOf;
  }
  t.is(outputs.length, 1, 'the event comes out once, whole');
  t.true(outputs[0]!.equals(event));
  t.is(rest?.toString(), '{"type":"MODIFIED"');
  t.true(work <= bound, `${work} bytes of work for ${stream.length}`);
});

test.serial('a 16 MiB event through the balancer takes about as long as through a plain undici Pool', async (t) => {
  const event = longEvent(16 * MiB);
  const [server] = await startServers(['127.0.0.2'], {
    handler: (_req, res) => {
      (res as ServerResponse).writeHead(200, { 'content-type': 'application/json' });
      (res as ServerResponse).end(event);
    },
  });
  const pool = new undici.Pool(`https://${server!.authority}`, { allowH2: true, connect: { ca: certs.ca, servername: APISERVER_NAME } });
  const balancer = createBalancer({ origin: ORIGIN, target: `static:///${server!.authority}`, tls: { ca: certs.ca }, probe: false, hedge: false });
  /** Milliseconds to read the whole watch through `dispatcher`; rejects past `deadline` ms. */
  const read = async (dispatcher: undici.Dispatcher, deadline: number): Promise<{ ms: number; bytes: number }> => {
    const started = performance.now();
    const res = await undici.request(`${ORIGIN}${WATCH}`, { dispatcher, signal: AbortSignal.timeout(deadline) });
    let bytes = 0;
    for await (const chunk of res.body) bytes += (chunk as Buffer).length;
    return { ms: performance.now() - started, bytes };
  };
  try {
    // Warm both connections, so the comparison is of the bodies alone.
    await read(pool, 60_000);
    await read(balancer, 60_000);
    const plain = await read(pool, 60_000);
    // Generous, so a busy machine cannot flake it: the quadratic framer took ~160× a plain Pool.
    const deadline = Math.ceil(Math.max(5_000, 10 * plain.ms));
    const balanced = await read(balancer, deadline).catch((error: unknown) => t.fail(`not read within ${deadline.toFixed(0)} ms (a plain Pool: ${plain.ms.toFixed(0)} ms): ${String(error)}`));
    if (!balanced) return;
    t.is(balanced.bytes, event.length);
    t.is(plain.bytes, event.length);
    t.log(`16 MiB event: balancer ${balanced.ms.toFixed(0)} ms, plain Pool ${plain.ms.toFixed(0)} ms`);
  } finally {
    await balancer.close();
    await pool.close();
    await server!.close();
  }
});

// A minimal HTTPS server for benchmarks, run as a child process so it has its own core.
// argv: <host> <h2|h1>. Prints the port on stdout once listening. `GET /__count` answers the number
// of requests served since the last such call (and resets it), so benchmarks can see the spread.
// A POST is read and answered 201 with the same object; `?watch=true` streams one event every
// 50 ms and ends cleanly after `timeoutSeconds` (default 1), as an apiserver ends a watch.
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { certs } from '../fixtures/certs/index.ts';

/** What the HTTP/1.1 and the HTTP/2 compatibility API have in common, as far as we use it. */
type Request = Readable & { url?: string; method?: string };
interface Response {
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: string): unknown;
  end(body: string): unknown;
  end(): unknown;
  on(event: 'close', listener: () => void): unknown;
}

const [host = '127.0.0.1', protocol = 'h2'] = process.argv.slice(2);
const object = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'bench', namespace: 'default' } };
const body = JSON.stringify(object);
const json = { 'content-type': 'application/json' };
let served = 0;

function watch(url: URL, res: Response): void {
  const seconds = Number(url.searchParams.get('timeoutSeconds') ?? 1);
  res.writeHead(200, json);
  let resourceVersion = 0;
  const tick = setInterval(() => {
    resourceVersion++;
    res.write(`${JSON.stringify({ type: 'MODIFIED', object: { ...object, metadata: { ...object.metadata, resourceVersion: String(resourceVersion) } } })}\n`);
  }, 50);
  const end = setTimeout(() => {
    clearInterval(tick);
    res.end();
  }, seconds * 1000);
  res.on('close', () => {
    clearInterval(tick);
    clearTimeout(end);
  });
}

const handler = (req: Request, res: Response): void => {
  if (req.url === '/__count') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(String(served));
    served = 0;
    return;
  }
  if (req.url !== '/readyz') served++;
  const url = new URL(req.url ?? '/', 'https://bench');
  if (url.searchParams.get('watch') === 'true') return watch(url, res);
  if (req.method === 'POST') {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.writeHead(201, json);
      res.end(Buffer.concat(chunks).toString() || body);
    });
    return;
  }
  res.writeHead(200, json);
  res.end(body);
};
const server =
  protocol === 'h1'
    ? https.createServer({ ...certs.apiserver, keepAliveTimeout: 60_000 }, handler)
    : http2.createSecureServer({ ...certs.apiserver, allowHTTP1: true }, handler);
server.listen(0, host, () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('disconnect', () => process.exit(0));

// A minimal HTTPS server for benchmarks, run as a child process so it has its own core.
// argv: <host> <h2|h1>. Prints the port on stdout once listening. `GET /__count` answers the number
// of requests served since the last such call (and resets it), so benchmarks can see the spread.
// `?size=N` answers a JSON body of about N bytes instead of the small ConfigMap.
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { certs } from '../fixtures/certs/index.ts';

const [host = '127.0.0.1', protocol = 'h2'] = process.argv.slice(2);
const body = JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'bench', namespace: 'default' } });
let served = 0;
const handler = (req: { url?: string }, res: { writeHead(s: number, h: Record<string, string>): void; end(b: string): void }): void => {
  if (req.url === '/__count') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(String(served));
    served = 0;
    return;
  }
  if (req.url !== '/readyz') served++;
  res.writeHead(200, { 'content-type': 'application/json' });
  const size = Number(/[?&]size=(\d+)/.exec(req.url ?? '')?.[1] ?? 0);
  res.end(size > 0 ? sized(size) : body);
};
const bodies = new Map<number, string>();
function sized(size: number): string {
  let text = bodies.get(size);
  if (!text) {
    text = JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', data: { text: 'x'.repeat(Math.max(0, size - 60)) } });
    bodies.set(size, text);
  }
  return text;
}
const server =
  protocol === 'h1'
    ? https.createServer({ ...certs.apiserver, keepAliveTimeout: 60_000 }, handler)
    : http2.createSecureServer({ ...certs.apiserver, allowHTTP1: true }, handler);
server.listen(0, host, () => {
  process.stdout.write(`${(server.address() as AddressInfo).port}\n`);
});
process.on('disconnect', () => process.exit(0));

// The floor of any local proxy built on Node's HTTP server and undici, as kube-balancer proxy is:
// node:http in front of one undici Pool over HTTP/2 + TLS to the kubeconfig's server (one
// apiserver), the token added, the answer written from a dispatch handler. No balancing, no
// checks, no credentials refresh. `BENCH_PROXY_FLOOR=1 npm run bench -- proxycpu` measures it beside
// kube-balancer proxy in the same run; its CPU per request against kubectl proxy's says what Node's
// HTTP stack itself costs (BENCHMARKS.md).
//   node bench/repro/thin-proxy.ts <kubeconfig>   → prints "Starting to serve on http://127.0.0.1:PORT"
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { Pool, type Dispatcher } from 'undici';

const config = new KubeConfig();
config.loadFromString(readFileSync(process.argv[2]!, 'utf8'));
const cluster = config.getCurrentCluster()!;
const user = config.getCurrentUser()!;
const server = new URL(cluster.server);
const pool = new Pool(server.origin, {
  allowH2: true,
  connections: 1,
  connect: { ca: Buffer.from(cluster.caData!, 'base64'), ...(cluster.tlsServerName ? { servername: cluster.tlsServerName } : {}) },
});
const authorization = `Bearer ${user.token}`;

class ToClient implements Dispatcher.DispatchHandler {
  readonly res: ServerResponse;
  constructor(res: ServerResponse) {
    this.res = res;
  }
  onRequestStart(): void {}
  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    const out: string[] = [];
    for (const name in headers) {
      const value = headers[name];
      if (value === undefined || name === 'connection' || name === 'transfer-encoding') continue;
      if (typeof value === 'string') out.push(name, value);
      else for (const v of value) out.push(name, v);
    }
    this.res.writeHead(statusCode, out);
  }
  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.res.write(chunk);
  }
  onResponseEnd(): void {
    this.res.end();
  }
  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    if (this.res.headersSent) this.res.destroy();
    else this.res.writeHead(502).end(error.message);
  }
}

const proxy = createServer((req, res) => {
  const headers: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    if (name !== 'host' && name !== 'connection' && name !== 'authorization') headers.push(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  }
  headers.push('authorization', authorization);
  pool.dispatch({ origin: server.origin, path: req.url!, method: req.method as Dispatcher.HttpMethod, headers }, new ToClient(res));
});
proxy.listen(0, '127.0.0.1', () => {
  const address = proxy.address() as AddressInfo;
  console.log(`Starting to serve on http://127.0.0.1:${address.port}`);
});
process.once('SIGTERM', () => {
  proxy.close();
  void pool.close();
  proxy.closeAllConnections();
});

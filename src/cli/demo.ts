import { parseArgs } from 'node:util';
import { Client, request } from 'undici';
import { APISERVER_NAME, certs } from '../../fixtures/certs/index.ts';
import { startServers, staticTarget, type TestServer } from '../../fixtures/server/TestServer.ts';
import { createBalancer } from '../index.ts';

const ORIGIN = `https://${APISERVER_NAME}:6443`;

export interface DemoOptions {
  requests: number;
  concurrency: number;
  servers: number;
}

export interface DemoSummary {
  servers: string[];
  balanced: number[];
  singleConnection: number[];
}

/**
 * Starts local apiserver-like HTTPS servers on 127.0.0.2…, sends the same GETs once through
 * kube-balancer and once over one plain connection (what an L4 load balancer gives a client with one
 * HTTP/2 connection), and prints how each spread its requests.
 */
export async function runDemo(options: DemoOptions, out: (line: string) => void = console.log): Promise<DemoSummary> {
  const hosts = Array.from({ length: options.servers }, (_, i) => `127.0.0.${i + 2}`);
  const servers = await startServers(hosts);
  try {
    out(`kube-balancer demo: ${servers.length} apiserver-like HTTPS servers (h2, kubeadm certificate) on ${hosts.join(', ')}`);
    out(`${options.requests} GETs to ${ORIGIN}/api/v1/namespaces/default/configmaps, ${options.concurrency} at a time\n`);

    const balancer = createBalancer({ target: staticTarget(servers), tls: { ca: certs.ca } });
    await send(options, (path) => request(`${ORIGIN}${path}`, { dispatcher: balancer }));
    await balancer.close();
    const balanced = takeCounts(servers);

    // An L4 balancer picks one server per connection, and the client keeps that one connection.
    const pinned = servers[Math.floor(Math.random() * servers.length)] as TestServer;
    const client = new Client(pinned.url, { connect: { ca: certs.ca, servername: APISERVER_NAME } });
    await send(options, (path) => client.request({ path, method: 'GET', headers: { host: `${APISERVER_NAME}:6443` } }));
    await client.close();
    const singleConnection = takeCounts(servers);

    const width = Math.max(...servers.map((s) => s.name.length), 14);
    out(['client'.padEnd(18), ...servers.map((s) => s.name.padStart(width))].join(' '));
    out(row('kube-balancer', balanced, options.requests, width));
    out(row('one connection', singleConnection, options.requests, width));
    return { servers: servers.map((s) => s.name), balanced, singleConnection };
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
}

async function send(options: DemoOptions, get: (path: string) => Promise<{ body: { dump(): Promise<void> } }>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < options.requests) {
      next++;
      const res = await get('/api/v1/namespaces/default/configmaps');
      await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
}

function takeCounts(servers: TestServer[]): number[] {
  return servers.map((s) => s.requests.splice(0).length);
}

function row(label: string, counts: number[], total: number, width: number): string {
  const cells = counts.map((n) => `${n} (${Math.round((100 * n) / total)}%)`.padStart(width));
  return [label.padEnd(18), ...cells].join(' ');
}

export async function demoCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      requests: { type: 'string', default: '300' },
      concurrency: { type: 'string', default: '10' },
      servers: { type: 'string', default: '3' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log('usage: kube-balancer demo [--requests N] [--concurrency N] [--servers N]');
    return 0;
  }
  const options = {
    requests: positiveInt('--requests', values.requests),
    concurrency: positiveInt('--concurrency', values.concurrency),
    servers: positiveInt('--servers', values.servers),
  };
  if (options.servers > 8) throw new Error('--servers must be at most 8 (127.0.0.2–127.0.0.9)');
  await runDemo(options);
  return 0;
}

function positiveInt(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer, got "${value}"`);
  return n;
}

import { isIP } from 'node:net';
import tls, { type PeerCertificate } from 'node:tls';
import { Agent, request } from 'undici';
import { endpointKey, type EndpointAddress } from '../resolver/Resolver.ts';
import { duration, EXIT, parse, UsageError } from './args.ts';
import { checkEndpoint, type EndpointCheck } from './checkEndpoint.ts';
import type { Command } from './command.ts';
import { DNS_SERVER_HELP, openResolver, resolveOnce } from './endpoints.ts';
import { loadClusterAccess, type ClusterAccess } from './kubeconfig.ts';
import { table } from './table.ts';

export const probe: Command = {
  help: `usage: kube-balancer probe [--kubeconfig FILE] [--context NAME] [--target URI] [--dns-server ADDR]...
                           [--timeout TIME] [--json]

Connects to every apiserver of the cluster the kubeconfig points at, as kube-balancer would: verifies
each certificate against the one name the kubeconfig gives (tls-server-name, else the server's host),
never against the dialled IP; then asks /readyz with the kubeconfig's credentials and measures its
latency. Says what to fix for each problem.

options:
  --kubeconfig FILE  default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account
  --context NAME     default: the kubeconfig's current-context
  --target URI       which apiservers to check (dns+srv:///…, dns:///name:port, static:///ip:port,…);
                     default: the addresses of the default/kubernetes EndpointSlice, read through
                     the kubeconfig's server
${DNS_SERVER_HELP}
  --timeout TIME     per connection and request (default 5s)
  --json             print {"kubeconfig", "context", "server", "name", "target", "ok", "problems",
                     "endpoints": [{address, port, tls, readyz, latencyMs, problems}]}
  -h, --help         this help

Exit codes: 0 every apiserver verified and ready, 1 a problem was found (or none could be listed),
2 usage error.`,

  async run(args) {
    const { values } = parse(args, {
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      target: { type: 'string' },
      'dns-server': { type: 'string', multiple: true },
      timeout: { type: 'string', default: '5s' },
      json: { type: 'boolean' },
    });
    const timeoutMs = duration('--timeout', values.timeout);
    if (values['dns-server'] && !values.target) throw new UsageError('--dns-server needs --target');
    // A bad target is a usage error: find out before reading any file.
    const resolver = values.target === undefined ? undefined : openResolver(values.target, values['dns-server']);
    const access = await loadClusterAccess(values.kubeconfig, values.context).catch(async (error: unknown) => {
      await resolver?.close?.();
      throw error;
    });
    let target: string;
    let endpoints: readonly EndpointAddress[];
    if (resolver) {
      target = values.target!;
      endpoints = (await resolveOnce(resolver, target)).endpoints;
    } else {
      target = 'the default/kubernetes EndpointSlice';
      endpoints = await endpointSliceAddresses(access, timeoutMs);
    }
    const checks = await Promise.all(endpoints.map((e) => checkEndpoint(e, access, timeoutMs)));
    const problems = checks.flatMap((c) => c.problems);
    if (!access.verify) problems.unshift(`the kubeconfig turns certificate verification off (insecure-skip-tls-verify): kube-balancer would too; the TLS results say what verification would find`);
    const ok = problems.length === 0;
    if (values.json) {
      console.log(
        JSON.stringify({ kubeconfig: access.source, context: access.context, server: access.server.href, name: access.name, target, ok, problems, endpoints: checks }, null, 2),
      );
    } else {
      console.log(report(access, target, checks, problems));
    }
    return ok ? EXIT.ok : EXIT.failure;
  },
};

function report(access: ClusterAccess, target: string, checks: EndpointCheck[], problems: string[]): string {
  const lines = [
    `kubeconfig ${access.source}, context ${access.context}: server ${access.server.origin}; every certificate must cover ${access.name}`,
    `${checks.length} apiserver${checks.length === 1 ? '' : 's'} from ${target}`,
    '',
    table(
      ['APISERVER', 'TLS', 'READYZ', 'LATENCY'],
      checks.map((c) => [
        endpointKey(c),
        c.tls.ok ? `ok (${c.tls.protocol})` : tlsFailure(c),
        c.readyz.status === null ? '-' : c.readyz.ok ? 'ok' : String(c.readyz.status),
        c.latencyMs === null ? '-' : `${c.latencyMs} ms`,
      ]),
      [false, false, false, true],
    ),
    '',
  ];
  if (problems.length === 0) lines.push(`all ${checks.length} verified and ready`);
  else lines.push('to fix:', ...problems.map((p) => `  - ${p}`));
  return lines.join('\n');
}

function tlsFailure(c: EndpointCheck): string {
  if (c.tls.protocol === null) return `no connection (${c.tls.error})`;
  if (c.tls.error === 'ERR_TLS_CERT_ALTNAME_INVALID') return 'wrong name';
  return `untrusted (${c.tls.error})`;
}

/**
 * The apiservers the cluster itself lists: the ready addresses of the `default/kubernetes`
 * EndpointSlice (kept by the apiservers' lease reconciler), read once through the kubeconfig's server.
 */
async function endpointSliceAddresses(access: ClusterAccess, timeoutMs: number): Promise<EndpointAddress[]> {
  const agent = new Agent({
    connect: {
      ca: access.ca,
      cert: access.cert,
      key: access.key,
      servername: isIP(access.name) ? undefined : access.name,
      rejectUnauthorized: access.verify,
      checkServerIdentity: (_host: string, cert: PeerCertificate) => tls.checkServerIdentity(access.name, cert),
      timeout: timeoutMs,
    },
  });
  const path = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dkubernetes';
  const where = `the default/kubernetes EndpointSlice through ${access.server.origin}`;
  try {
    const res = await request(new URL(path, access.server), { headers: access.headers, dispatcher: agent, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const body = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}${body ? ` ${body.slice(0, 120).replace(/\s+/g, ' ')}` : ''}`);
    const endpoints = parseSlices(JSON.parse(body) as SliceList);
    if (endpoints.length === 0) throw new Error('it lists no ready address');
    return endpoints;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new Error(`cannot read ${where}: ${code ?? message}; name the apiservers with --target`);
  } finally {
    await agent.destroy();
  }
}

interface SliceList {
  items?: Array<{
    addressType?: string;
    ports?: Array<{ name?: string; port?: number }>;
    endpoints?: Array<{ addresses?: string[]; conditions?: { ready?: boolean } }>;
  }>;
}

function parseSlices(list: SliceList): EndpointAddress[] {
  const out: EndpointAddress[] = [];
  for (const slice of list.items ?? []) {
    const port = (slice.ports?.find((p) => p.name === 'https') ?? slice.ports?.[0])?.port;
    if (!port || (slice.addressType !== undefined && slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6')) continue;
    for (const e of slice.endpoints ?? []) {
      const address = e.addresses?.[0];
      if (address && isIP(address) && e.conditions?.ready !== false) out.push({ address, port, source: 'endpointslice' });
    }
  }
  return out;
}

import type { Balancer } from '../index.ts';
import { fromKubeConfig } from '../kube/fromKubeConfig.ts';
import { type EndpointAddress } from '../resolver/Resolver.ts';
import { endpointKey } from '../net/endpointKey.ts';
import { duration, EXIT, parse } from './args.ts';
import { checkEndpoint, type EndpointCheck } from './checkEndpoint.ts';
import type { Command } from './command.ts';
import { asUsageError, DNS_SERVER_HELP, parseDnsServers } from './endpoints.ts';
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
  --target URI       which apiservers to check: dns+srv:///…, dns:///name:port, static:///ip:port,…,
                     kubernetes:///namespace/service; default: where kube-balancer would look —
                     the default/kubernetes EndpointSlice, read through the kubeconfig's server
                     (in a cluster, the kubernetes-headless SRV records first)
${DNS_SERVER_HELP}
  --timeout TIME     per connection and request, and for finding the apiservers (default 5s)
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
    const dnsServers = values['dns-server'] ?? [];
    parseDnsServers(dnsServers);
    const access = await loadClusterAccess(values.kubeconfig, values.context);
    const { target, endpoints } = await discover(access, values.target, dnsServers, timeoutMs);
    const checks = await Promise.all(endpoints.map((e) => checkEndpoint(e, access, timeoutMs)));
    const problems = checks.flatMap((c) => c.problems);
    if (!access.tls.rejectUnauthorized) problems.unshift(`the kubeconfig turns certificate verification off (insecure-skip-tls-verify): kube-balancer would too; the TLS results say what verification would find`);
    const ok = problems.length === 0;
    if (values.json) {
      console.log(
        JSON.stringify({ kubeconfig: access.source, context: access.context, server: access.server.href, name: access.verification.name, target, ok, problems, endpoints: checks }, null, 2),
      );
    } else {
      console.log(report(access, target, checks, problems));
    }
    return ok ? EXIT.ok : EXIT.failure;
  },
};

function report(access: ClusterAccess, target: string, checks: EndpointCheck[], problems: string[]): string {
  const lines = [
    `kubeconfig ${access.source}, context ${access.context}: server ${access.server.origin}; every certificate must cover ${access.verification.name}`,
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
 * The apiservers kube-balancer would use for this kubeconfig: `fromKubeConfig`'s own discovery
 * (the target, or its default), asked once. The kubeconfig's server is left out: it is where
 * requests go only when every discovered apiserver is down, not one to check.
 */
async function discover(access: ClusterAccess, target: string | undefined, dnsServers: string[], timeoutMs: number): Promise<{ target: string; endpoints: EndpointAddress[] }> {
  let balancer: Balancer;
  try {
    balancer = await fromKubeConfig(access.kubeConfig, {
      ...(target === undefined ? {} : { target }),
      ...(dnsServers.length ? { dns: { servers: dnsServers } } : {}),
      bootstrap: { lastResort: false },
      probe: false,
    });
  } catch (error) {
    throw asUsageError(error);
  }
  const where = balancer.stats().resolver.target;
  try {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    await Promise.race([balancer.ready(), timeout]).finally(() => clearTimeout(timer));
    return { target: where, endpoints: balancer.endpoints().map((e) => ({ address: e.address, port: e.port })) };
  } catch (error) {
    const cause = (error as { cause?: Error }).cause;
    throw new Error(`cannot list the apiservers (${where}): ${cause?.message ?? (error as Error).message}; name them with --target`);
  } finally {
    await balancer.close();
  }
}

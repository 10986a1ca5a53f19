// `kube-balancer resolve` as a child process against the embedded DNS server.
import test from 'ava';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { runCli } from '../helpers/cli.ts';

const SRV = '_https._tcp.kubernetes-headless.default.svc.cluster.local.';

async function withDns(run: (dns: DnsTestServer) => Promise<void>): Promise<void> {
  const dns = await DnsTestServer.start();
  try {
    await run(dns);
  } finally {
    await dns.close();
  }
}

function addApiservers(dns: DnsTestServer): void {
  for (const [i, host] of ['127.0.0.2', '127.0.0.3', '127.0.0.4'].entries()) {
    const target = `apiserver-${i}.kubernetes-headless.default.svc.cluster.local`;
    dns.add({ name: SRV, type: 'SRV', ttl: 7, data: { priority: i === 2 ? 1 : 0, weight: 33, port: 6443, target } }, { name: target, type: 'A', ttl: 7, data: host });
  }
}

test('dns+srv: a table of every endpoint with priority, weight, TTL and source', async (t) => {
  await withDns(async (dns) => {
    addApiservers(dns);
    const result = await runCli(['resolve', `dns+srv:///${SRV}`, '--dns-server', dns.address]);
    t.is(result.code, 0, result.stderr);
    t.is(result.stderr, '');
    const lines = result.stdout.trimEnd().split('\n');
    t.is(lines[0], `dns+srv:///${SRV}: 3 endpoints`);
    t.regex(lines[1]!, /^ENDPOINT\s+PRIORITY\s+WEIGHT\s+TTL\s+SOURCE$/);
    t.regex(lines[2]!, /^127\.0\.0\.2:6443\s+0\s+33\s+7s\s+dns\+srv$/);
    t.regex(lines[3]!, /^127\.0\.0\.3:6443\s+0\s+33\s+7s\s+dns\+srv$/);
    t.regex(lines[4]!, /^127\.0\.0\.4:6443\s+1\s+33\s+7s\s+dns\+srv$/, 'sorted by priority');
  });
});

test('--json: {target, endpoints: [{address, port, priority, weight, ttl, source}]}', async (t) => {
  await withDns(async (dns) => {
    addApiservers(dns);
    const result = await runCli(['resolve', '--json', `dns+srv:///${SRV}`, '--dns-server', dns.address]);
    t.is(result.code, 0, result.stderr);
    t.deepEqual(JSON.parse(result.stdout), {
      target: `dns+srv:///${SRV}`,
      endpoints: [
        { address: '127.0.0.2', port: 6443, priority: 0, weight: 33, ttl: 7, source: 'dns+srv' },
        { address: '127.0.0.3', port: 6443, priority: 0, weight: 33, ttl: 7, source: 'dns+srv' },
        { address: '127.0.0.4', port: 6443, priority: 1, weight: 33, ttl: 7, source: 'dns+srv' },
      ],
    });
  });
});

test('dns: and static: targets; static needs no DNS and has no TTL', async (t) => {
  await withDns(async (dns) => {
    dns.add({ name: 'apiservers.example.test', type: 'A', ttl: 30, data: '127.0.0.5' }, { name: 'apiservers.example.test', type: 'A', ttl: 30, data: '127.0.0.6' });
    const byName = await runCli(['resolve', '--json', 'dns:///apiservers.example.test.:6443', '--dns-server', dns.address]);
    t.is(byName.code, 0, byName.stderr);
    t.deepEqual(
      (JSON.parse(byName.stdout) as { endpoints: unknown[] }).endpoints,
      ['127.0.0.5', '127.0.0.6'].map((address) => ({ address, port: 6443, priority: 0, weight: 1, ttl: 30, source: 'dns' })),
    );
  });
  const fixed = await runCli(['resolve', 'static:///10.0.0.11:6443?weight=3,10.0.0.2:6443']);
  t.is(fixed.code, 0, fixed.stderr);
  t.regex(fixed.stdout, /^10\.0\.0\.2:6443\s+0\s+1\s+-\s+static$/m);
  t.regex(fixed.stdout, /^10\.0\.0\.11:6443\s+0\s+3\s+-\s+static$/m);
  const rows = fixed.stdout.split('\n').slice(2);
  t.true(rows[0]!.startsWith('10.0.0.2:') && rows[1]!.startsWith('10.0.0.11:'), 'addresses in numeric order');
});

test('a name that does not exist: one line with the DNS reason, exit 1', async (t) => {
  await withDns(async (dns) => {
    const result = await runCli(['resolve', 'dns+srv:///_https._tcp.missing.example.test.', '--dns-server', dns.address]);
    t.is(result.code, 1);
    t.is(result.stdout, '');
    t.is(result.stderr.trimEnd().split('\n').length, 1);
    t.regex(result.stderr, /^kube-balancer resolve: dns\+srv:\/\/\/_https\._tcp\.missing\.example\.test\. resolved to no endpoint: DNS .*NXDOMAIN/);
  });
});

test('a bad target, a bad --dns-server or no target: one line, exit 2', async (t) => {
  const cases = [
    [['resolve', 'http://10.0.0.1'], /^kube-balancer resolve: invalid target "http:\/\/10\.0\.0\.1": expected <scheme>:\/\/\/<name>/],
    [['resolve', 'ftp:///x'], /invalid target "ftp:\/\/\/x": unknown scheme "ftp:"/],
    [['resolve', 'dns:///apiservers.example.com'], /invalid target "dns:\/\/\/apiservers\.example\.com": needs a port/],
    [['resolve', 'static:///10.0.0.1:6443', '--dns-server', 'not-an-ip'], /--dns-server "not-an-ip" is not an IP address/],
    [['resolve'], /^kube-balancer resolve: missing <target> \(see kube-balancer resolve --help\)$/],
    [['resolve', 'static:///10.0.0.1:1', 'static:///10.0.0.2:1'], /one target only, got 2/],
    [['resolve', 'kubernetes:///default/kubernetes'], /a kubernetes: target is read through a cluster's API, which needs a kubeconfig: kube-balancer probe --target kubernetes:\/\/\/default\/kubernetes/],
  ] as const;
  for (const [args, message] of cases) {
    const result = await runCli(args);
    t.is(result.code, 2, args.join(' '));
    t.regex(result.stderr.trimEnd(), message);
    t.is(result.stderr.trimEnd().split('\n').length, 1, args.join(' '));
  }
});

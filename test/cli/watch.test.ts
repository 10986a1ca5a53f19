// `kube-balancer watch` as a child process, following the embedded DNS server while its zone changes.
import { createInterface } from 'node:readline';
import test from 'ava';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { finished, runCli, spawnCli } from '../helpers/cli.ts';

const SRV = '_https._tcp.kubernetes-headless.default.svc.cluster.local.';
const HOSTS = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];

function srv(dns: DnsTestServer, hosts: readonly string[], weight = 33): void {
  dns.remove(SRV);
  for (const [i, host] of hosts.entries()) {
    const target = `apiserver-${i}.kubernetes-headless.default.svc.cluster.local`;
    dns.set(target, 'A', [{ name: target, type: 'A', ttl: 1, data: host }]);
    dns.add({ name: SRV, type: 'SRV', ttl: 1, data: { priority: 0, weight, port: 6443, target } });
  }
}

/** Runs `watch … --count 2`, calling `change` once the first set is out; returns stdout lines, stderr and the exit code. */
async function watchTwoSets(dns: DnsTestServer, extra: string[], change: () => void): Promise<{ code: number | null; lines: string[]; stderr: string }> {
  const child = spawnCli(['watch', `dns+srv:///${SRV}`, '--dns-server', dns.address, '--count', '2', ...extra]);
  const lines: string[] = [];
  let changed = false;
  const done = finished(child, 30_000);
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    if (!changed) {
      changed = true;
      change();
    }
  });
  const result = await done;
  return { code: result.code, lines, stderr: result.stderr };
}

test('--json --count 2: the first set, then the change (one object per line), exit 0', async (t) => {
  const dns = await DnsTestServer.start();
  try {
    srv(dns, HOSTS);
    const { code, lines, stderr } = await watchTwoSets(dns, ['--json'], () => srv(dns, HOSTS.slice(0, 2), 50));
    t.is(code, 0, stderr);
    const [first, second, ...rest] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    t.deepEqual(rest, []);
    t.is(first!.type, 'endpoints');
    t.true(Number.isFinite(Date.parse(first!.time as string)));
    t.deepEqual(first!.added, HOSTS.map((h) => `${h}:6443`));
    t.deepEqual(first!.endpoints, HOSTS.map((address) => ({ address, port: 6443, priority: 0, weight: 33, ttl: 1, source: 'dns+srv' })));
    t.deepEqual(second!.added, []);
    t.deepEqual(second!.removed, ['127.0.0.4:6443']);
    t.deepEqual(second!.changed, ['127.0.0.2:6443', '127.0.0.3:6443']);
    t.is((second!.endpoints as unknown[]).length, 2);
  } finally {
    await dns.close();
  }
});

test('text: + for added endpoints, - for removed, ~ for a changed weight', async (t) => {
  const dns = await DnsTestServer.start();
  try {
    srv(dns, HOSTS.slice(0, 2));
    const { code, lines, stderr } = await watchTwoSets(dns, [], () => srv(dns, HOSTS.slice(1), 50));
    t.is(code, 0, stderr);
    const text = lines.join('\n');
    t.regex(text, /^\d\d:\d\d:\d\d\.\d{3} {2}dns\+srv:\/\/\/\S+: 2 endpoints$/m);
    t.regex(text, /^ {2}\+ 127\.0\.0\.2:6443 {2}priority 0 {2}weight 33 {2}ttl 1s {2}dns\+srv$/m);
    t.regex(text, /: 2 endpoints \(changed\)$/m);
    t.regex(text, /^ {2}- 127\.0\.0\.2:6443$/m);
    t.regex(text, /^ {2}\+ 127\.0\.0\.4:6443 {2}priority 0 {2}weight 50/m);
    t.regex(text, /^ {2}~ 127\.0\.0\.3:6443 {2}weight 33 → 50$/m);
  } finally {
    await dns.close();
  }
});

test('--duration: a static target prints its one set and exits 0 when the time is up', async (t) => {
  const start = Date.now();
  const result = await runCli(['watch', 'static:///10.0.0.1:6443,10.0.0.2:6443', '--duration', '1s']);
  t.is(result.code, 0, result.stderr);
  t.true(Date.now() - start >= 1000);
  t.regex(result.stdout, /^ {2}\+ 10\.0\.0\.1:6443 {2}priority 0 {2}weight 1 {2}static$/m);
});

test('DNS failures are reported and change nothing; never any endpoint: exit 1', async (t) => {
  const dns = await DnsTestServer.start();
  try {
    const result = await runCli(['watch', 'dns+srv:///_https._tcp.missing.example.test.', '--dns-server', dns.address, '--duration', '1500ms', '--json']);
    t.is(result.code, 1);
    const events = result.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string; message: string });
    t.true(events.length >= 1);
    t.true(events.every((e) => e.type === 'error' && /NXDOMAIN/.test(e.message)));
    t.is(result.stderr, 'kube-balancer watch: dns+srv:///_https._tcp.missing.example.test. resolved to no endpoint while watched\n');
  } finally {
    await dns.close();
  }
});

test('usage errors: bad target, bad --count, missing target: exit 2', async (t) => {
  for (const [args, message] of [
    [['watch', 'nope'], /invalid target "nope"/],
    [['watch', 'static:///10.0.0.1:6443', '--count', '0'], /--count must be a whole number of at least 1, got "0"/],
    [['watch'], /missing <target>/],
  ] as const) {
    const result = await runCli(args);
    t.is(result.code, 2, args.join(' '));
    t.regex(result.stderr, message);
  }
});

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { parseNameServer, parseResolvConf, readResolvConf } from '../../src/dns/ResolvConf.ts';

const kubernetesPod = `# Kubernetes pod, dnsPolicy ClusterFirst
search default.svc.cluster.local svc.cluster.local cluster.local
nameserver 10.96.0.10
options ndots:5
`;

test('a Kubernetes pod resolv.conf', (t) => {
  t.deepEqual(parseResolvConf(kubernetesPod), {
    nameservers: [{ address: '10.96.0.10', port: 53 }],
    search: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
    ndots: 5,
    timeout: 5,
    attempts: 2,
    rotate: false,
  });
});

test('at most three name servers, IPv6 and link-local zones, bad lines skipped', (t) => {
  const conf = parseResolvConf('nameserver 10.0.0.1\nnameserver fe80::1%eth0\nnameserver not-an-ip\n; comment\nnameserver ::1\nnameserver 10.0.0.4\n');
  t.deepEqual(
    conf.nameservers.map((s) => s.address),
    ['10.0.0.1', 'fe80::1%eth0', '::1'],
  );
});

test('the last search or domain line wins', (t) => {
  t.deepEqual(parseResolvConf('search a.test b.test\ndomain c.test\n').search, ['c.test']);
  t.deepEqual(parseResolvConf('domain c.test\nsearch a.test b.test\n').search, ['a.test', 'b.test']);
});

test('options are capped like glibc; unknown ones are ignored', (t) => {
  const conf = parseResolvConf('options ndots:20 timeout:99 attempts:9 rotate edns0 single-request\n');
  t.deepEqual([conf.ndots, conf.timeout, conf.attempts, conf.rotate], [15, 30, 5, true]);
  const low = parseResolvConf('options timeout:0 attempts:0 ndots:0\n');
  t.deepEqual([low.ndots, low.timeout, low.attempts], [0, 1, 1]);
});

test('LOCALDOMAIN replaces the search list and RES_OPTIONS amends the options', (t) => {
  const conf = parseResolvConf(kubernetesPod, { LOCALDOMAIN: 'x.test  y.test ', RES_OPTIONS: 'ndots:2 attempts:3' });
  t.deepEqual(conf.search, ['x.test', 'y.test']);
  t.is(conf.ndots, 2);
  t.is(conf.attempts, 3);
});

test('no search or domain line: the host name\'s domain, after its first dot, as glibc does', (t) => {
  t.deepEqual(parseResolvConf('nameserver 10.0.0.1\n', {}, 'node1.dc1.example.com').search, ['dc1.example.com']);
  t.deepEqual(parseResolvConf('', {}, 'vm').search, [], 'no dot, no domain');
  t.deepEqual(parseResolvConf('', {}, 'node1.').search, ['.'], 'a final dot: the root');
  t.deepEqual(parseResolvConf('search a.test\n', {}, 'node1.dc1.example.com').search, ['a.test']);
  t.deepEqual(parseResolvConf('domain a.test\n', {}, 'node1.dc1.example.com').search, ['a.test']);
  t.deepEqual(parseResolvConf('', { LOCALDOMAIN: 'x.test' }, 'node1.dc1.example.com').search, ['x.test']);
  t.deepEqual(parseResolvConf('', { LOCALDOMAIN: '' }, 'node1.dc1.example.com').search, ['.'], 'an empty LOCALDOMAIN is the root, still a list');
  t.deepEqual(parseResolvConf('search\n', {}, 'node1.dc1.example.com').search, ['dc1.example.com'], 'an empty search line gives no list');
});

test('a search or domain line with nothing after it is ignored, it does not clear the list', (t) => {
  t.deepEqual(parseResolvConf('search a.test b.test\nsearch\nsearch   \ndomain\t\ndomain\n').search, ['a.test', 'b.test']);
  t.deepEqual(parseResolvConf('domain c.test\nsearch \t \n').search, ['c.test']);
});

test('keywords count at the start of a line, followed by a space or a tab, as glibc matches them', (t) => {
  const conf = parseResolvConf(' search x.test\nsearch\ty.test\nnameserver10.0.0.9\n\tnameserver 10.0.0.8\nnameserver\t10.0.0.7\n# search z.test\n');
  t.deepEqual(conf.search, ['y.test']);
  t.deepEqual(
    conf.nameservers.map((s) => s.address),
    ['10.0.0.7'],
  );
});

test('search domains: one leading dot is dropped, the root stays, names that cannot be queried are skipped', (t) => {
  t.deepEqual(parseResolvConf('search .a.test . b..test c.test\n').search, ['a.test', '.', 'c.test']);
  t.deepEqual(parseResolvConf('', { LOCALDOMAIN: ' x.test' }).search, ['.', 'x.test'], 'a leading blank in LOCALDOMAIN is an empty first domain in glibc');
});

test('ndots, timeout and attempts that are not numbers: what C\'s atoi makes of them, as glibc does', (t) => {
  const ndots = (value: string): number => parseResolvConf(`options ndots:${value}\n`).ndots;
  t.is(ndots('abc'), 0);
  t.is(ndots(''), 0);
  t.is(ndots('3x'), 3);
  t.is(ndots('+2'), 2);
  t.is(ndots('-4'), 0, 'negative: like 0, every name has that many dots');
  t.is(ndots('99'), 15);
  t.is(ndots('4294967297'), 1, 'atoi keeps the low 32 bits');
  t.is(ndots('99999999999999999999'), 0, 'strtol saturates, (int) makes it -1');
  t.is(parseResolvConf('options ndots:2 ndots:abc\n').ndots, 0, 'the last one wins, a non-number included');
  t.is(parseResolvConf('options ndots\n').ndots, 1, 'no colon: not the option');
  t.is(parseResolvConf('options timeout:abc attempts:3x\n').timeout, 1);
  t.is(parseResolvConf('options timeout:abc attempts:3x\n').attempts, 3);
  t.true(parseResolvConf('options rotate:yes\n').rotate, 'options match by prefix');
  t.is(parseResolvConf('options ndots:5\n', { RES_OPTIONS: 'ndots:x' }).ndots, 0);
});

test('no name server line: the local server, as glibc does', (t) => {
  t.deepEqual(parseResolvConf('search a.test\n').nameservers, [{ address: '127.0.0.1', port: 53 }]);
});

test('readResolvConf reads a file, and a missing file gives the defaults', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'resolv-'));
  writeFileSync(join(dir, 'resolv.conf'), kubernetesPod);
  t.is((await readResolvConf(join(dir, 'resolv.conf'), {})).ndots, 5);
  t.deepEqual((await readResolvConf(join(dir, 'missing'), {})).nameservers, [{ address: '127.0.0.1', port: 53 }]);
});

test('server specs for options.dns.servers', (t) => {
  t.deepEqual(parseNameServer('127.0.0.1'), { address: '127.0.0.1', port: 53 });
  t.deepEqual(parseNameServer('127.0.0.1:5353'), { address: '127.0.0.1', port: 5353 });
  t.deepEqual(parseNameServer('[::1]:53'), { address: '::1', port: 53 });
  t.deepEqual(parseNameServer('::1'), { address: '::1', port: 53 });
  t.deepEqual(parseNameServer('[fe80::1%eth0]:5353'), { address: 'fe80::1%eth0', port: 5353 });
  for (const bad of ['', 'dns.google', '127.0.0.1:0', '127.0.0.1:65536', '[127.0.0.1]:53', '::1:53:x', '1.2.3']) {
    t.is(parseNameServer(bad), undefined, bad);
  }
});

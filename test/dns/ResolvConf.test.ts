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
  const conf = parseResolvConf(kubernetesPod, { LOCALDOMAIN: ' x.test  y.test ', RES_OPTIONS: 'ndots:2 attempts:3' });
  t.deepEqual(conf.search, ['x.test', 'y.test']);
  t.is(conf.ndots, 2);
  t.is(conf.attempts, 3);
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

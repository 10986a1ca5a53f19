import net from 'node:net';
import * as dnsPacket from 'dns-packet';
import test from 'ava';
import { DnsTestServer } from '../../fixtures/dns/DnsTestServer.ts';
import { DnsError } from '../../src/dns/DnsError.ts';
import { dnsClient, nameServerOf } from '../helpers/dns.ts';
import { FakeClock } from '../helpers/FakeClock.ts';
import { activeResources, leftOver } from '../helpers/leaks.ts';
import { until } from '../helpers/poll.ts';

async function withServer(run: (server: DnsTestServer) => Promise<void>, host?: string): Promise<void> {
  const server = await DnsTestServer.start(host ? { host } : {});
  try {
    await run(server);
  } finally {
    await server.close();
  }
}

/** A port on 127.0.0.1 where nothing listens for UDP. */
async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

test('A and AAAA records, with their TTL', async (t) => {
  await withServer(async (server) => {
    server.add(
      { name: 'api.test', type: 'A', ttl: 30, data: '127.0.0.11' },
      { name: 'api.test', type: 'A', ttl: 20, data: '127.0.0.12' },
      { name: 'api.test', type: 'AAAA', ttl: 30, data: '::1' },
    );
    const dns = dnsClient([server]);
    const a = await dns.query('api.test.', 'A');
    t.is(a.kind, 'records');
    t.deepEqual([...a.addresses].sort(), ['127.0.0.11', '127.0.0.12']);
    t.is(a.ttl, 20, 'the minimum over the RRset (RFC 2181 §5.2)');
    t.is(a.transport, 'udp');
    t.deepEqual((await dns.query('API.test', 'AAAA')).addresses, ['::1']);
    t.true(server.log.every((q) => q.edns), 'EDNS0 is sent');
  });
});

test('SRV with glue from the additional section', async (t) => {
  await withServer(async (server) => {
    server.add(
      { name: '_https._tcp.api.test', type: 'SRV', ttl: 30, data: { priority: 10, weight: 50, port: 6443, target: 'node1.api.test' } },
      { name: '_https._tcp.api.test', type: 'SRV', ttl: 30, data: { priority: 20, weight: 0, port: 6443, target: 'node2.api.test' } },
      { name: 'node1.api.test', type: 'A', ttl: 7, data: '127.0.0.11' },
      { name: 'unrelated.api.test', type: 'A', ttl: 1, data: '127.0.0.99' },
    );
    const answer = await dnsClient([server]).query('_https._tcp.api.test.', 'SRV');
    t.deepEqual(answer.srv, [
      { priority: 10, weight: 50, port: 6443, target: 'node1.api.test' },
      { priority: 20, weight: 0, port: 6443, target: 'node2.api.test' },
    ]);
    t.deepEqual([...answer.glue], [['node1.api.test', ['127.0.0.11']]]);
    t.is(answer.ttl, 7, 'glue that is used lowers the TTL');
  });
});

for (const spoof of ['id', 'question', 'port', 'address'] as const) {
  test(`a spoofed reply (wrong ${spoof}) sent first is ignored and the real one accepted`, async (t) => {
    await withServer(async (server) => {
      server.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
      server.rule({ action: { spoof, delay: 20 } });
      const answer = await dnsClient([server]).query('api.test.', 'A');
      t.deepEqual(answer.addresses, ['127.0.0.11']);
      t.is(server.log.length, 1, 'no retry: the client kept waiting for the real answer');
    });
  });
}

test('stray, malformed and truncated datagrams before the real answer are ignored', async (t) => {
  await withServer(async (server) => {
    server.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    server.rule({
      action: {
        before: (real) => [
          Buffer.from('not dns at all'),
          Buffer.alloc(0),
          real.subarray(0, real.length - 1),
          withoutOpt(real).subarray(0, withoutOpt(real).length - 1), // dns-packet decodes this A as "127.0.0.undefined"
          real.subarray(0, 12),
          Buffer.concat([real, Buffer.from([0xc0])]).subarray(0, real.length - 3),
        ],
      },
    });
    const answer = await dnsClient([server]).query('api.test.', 'A');
    t.deepEqual(answer.addresses, ['127.0.0.11']);
  });
});

/** The answer with its trailing OPT record (11 bytes) cut off and ARCOUNT set to match. */
function withoutOpt(real: Buffer): Buffer {
  const copy = Buffer.from(real.subarray(0, real.length - 11));
  copy.writeUInt16BE(0, 10);
  return copy;
}

test('the cut answer used above really fools dns-packet', (t) => {
  const real = dnsPacket.encode({
    type: 'response',
    id: 1,
    questions: [{ name: 'api.test', type: 'A' }],
    answers: [{ name: 'api.test', type: 'A', ttl: 1, data: '127.0.0.11' }],
    additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 1232 } as unknown as dnsPacket.Answer],
  });
  const cut = withoutOpt(real).subarray(0, withoutOpt(real).length - 1);
  t.is((dnsPacket.decode(cut).answers?.[0] as { data: string }).data, '127.0.0.undefined');
});

test('a truncated answer (TC) is asked again over TCP and all 60 records arrive', async (t) => {
  await withServer(async (server) => {
    for (let i = 1; i <= 60; i++) server.add({ name: 'big.api.test', type: 'A', data: `127.0.1.${i}` });
    const answer = await dnsClient([server]).query('big.api.test.', 'A');
    t.is(answer.addresses.length, 60);
    t.is(answer.transport, 'tcp');
    t.deepEqual(
      server.log.map((q) => q.transport),
      ['udp', 'tcp'],
    );
  });
});

test('a TCP answer split into 3-byte pieces is reassembled', async (t) => {
  await withServer(async (server) => {
    server.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    server.rule({ transport: 'udp', action: { truncate: true } });
    server.rule({ transport: 'tcp', action: { split: 3, before: (real) => [Buffer.from(real).fill(0, 0, 2)] } });
    const answer = await dnsClient([server]).query('api.test.', 'A');
    t.deepEqual(answer.addresses, ['127.0.0.11']);
    t.is(answer.transport, 'tcp');
  });
});

test('a CNAME chain is followed inside one answer, with the smallest TTL', async (t) => {
  await withServer(async (server) => {
    server.add(
      { name: 'alias.api.test', type: 'CNAME', ttl: 5, data: 'middle.api.test' },
      { name: 'middle.api.test', type: 'CNAME', ttl: 60, data: 'svc.api.test' },
      { name: 'svc.api.test', type: 'A', ttl: 30, data: '127.0.0.21' },
    );
    const answer = await dnsClient([server]).query('alias.api.test.', 'A');
    t.is(answer.name, 'svc.api.test');
    t.deepEqual(answer.addresses, ['127.0.0.21']);
    t.is(answer.ttl, 5);
    t.is(server.log.length, 1);
  });
});

test('a CNAME answer without the target records makes the client ask for the target', async (t) => {
  await withServer(async (server) => {
    server.chase = false;
    server.add({ name: 'alias.api.test', type: 'CNAME', ttl: 5, data: 'svc.api.test' }, { name: 'svc.api.test', type: 'A', data: '127.0.0.21' });
    const answer = await dnsClient([server]).query('alias.api.test.', 'A');
    t.deepEqual(answer.addresses, ['127.0.0.21']);
    t.deepEqual(
      server.log.map((q) => q.name),
      ['alias.api.test', 'svc.api.test'],
    );
  });
});

test('a CNAME loop fails after a bounded number of hops', async (t) => {
  await withServer(async (server) => {
    server.chase = false;
    server.add({ name: 'a.api.test', type: 'CNAME', data: 'b.api.test' }, { name: 'b.api.test', type: 'CNAME', data: 'a.api.test' });
    const error = await t.throwsAsync(dnsClient([server]).query('a.api.test.', 'A'), { instanceOf: DnsError });
    t.is(error?.reason, 'CNAME_LOOP');
    t.true(server.log.length <= 3);
  });
});

test('NXDOMAIN, NODATA and SERVFAIL are told apart; SOA gives the negative TTL', async (t) => {
  await withServer(async (server) => {
    server.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    const dns = dnsClient([server], { attempts: 1 });
    const nx = await dns.query('missing.api.test.', 'A');
    t.is(nx.kind, 'NXDOMAIN');
    t.is(nx.ttl, 0, 'no SOA: not to be cached (RFC 2308 §5)');
    const nodata = await dns.query('api.test.', 'AAAA');
    t.is(nodata.kind, 'NODATA');
    server.soa = { ttl: 60, minimum: 9 };
    t.is((await dns.query('missing.api.test.', 'A')).ttl, 9, 'min(SOA TTL, MINIMUM) (RFC 2308 §5)');
    server.soa = { ttl: 4, minimum: 9 };
    t.is((await dns.query('api.test.', 'AAAA')).ttl, 4);
    server.rule({ action: { rcode: 2 } });
    const error = await t.throwsAsync(dns.query('api.test.', 'A'), { instanceOf: DnsError });
    t.is(error?.reason, 'SERVFAIL');
    t.is(error?.code, 'ERR_DNS');
    t.false(error?.negative);
  });
});

test('SERVFAIL, REFUSED and a closed port move on to the next server', async (t) => {
  const servers = await Promise.all([DnsTestServer.start(), DnsTestServer.start(), DnsTestServer.start()]);
  try {
    const [a, b, c] = servers;
    a.rule({ action: { rcode: 2 } });
    b.rule({ action: { rcode: 5 } });
    c.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    const dead = { address: '127.0.0.1', port: await closedPort() };
    const answer = await dnsClient([dead, nameServerOf(a), nameServerOf(b), nameServerOf(c)]).query('api.test.', 'A');
    t.deepEqual(answer.addresses, ['127.0.0.11']);
    t.deepEqual(
      servers.map((s) => s.log.length),
      [1, 1, 1],
    );
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
});

/** A referral for the query: NOERROR, no answer, not authoritative, no recursion, only an NS in the authority section. */
function referral(real: Buffer, flags = 0, additionals: dnsPacket.Answer[] = []): Buffer {
  const decoded = dnsPacket.decode(real);
  const opt = (decoded.additionals ?? []).filter((r) => r.type === 'OPT');
  return dnsPacket.encode({
    type: 'response',
    id: decoded.id ?? 0,
    flags,
    questions: decoded.questions ?? [],
    answers: [],
    authorities: [{ name: 'test', type: 'NS', ttl: 300, data: 'ns.elsewhere.example' }],
    additionals: [...additionals, ...opt],
  });
}

test('a lame referral (NOERROR, no answer, no AA, no RA, nothing additional) moves on to the next server, as glibc does', async (t) => {
  const servers = await Promise.all([DnsTestServer.start(), DnsTestServer.start()]);
  try {
    const [lame, good] = servers;
    lame.rule({ action: { replace: (real) => referral(real) } });
    good.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    const answer = await dnsClient([lame, good]).query('api.test.', 'A');
    t.deepEqual(answer.addresses, ['127.0.0.11']);
    t.deepEqual(
      servers.map((s) => s.log.length),
      [1, 1],
    );
    // Every server lame: a failure, not a NODATA that would empty a set.
    const error = await t.throwsAsync(dnsClient([lame], { attempts: 1 }).query('api.test.', 'A'), { instanceOf: DnsError });
    t.is(error?.reason, 'REFERRAL');
    t.false(error?.negative);
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('an empty NOERROR that is recursive, authoritative or carries additional records is NODATA, not a referral', async (t) => {
  const servers = await Promise.all([DnsTestServer.start(), DnsTestServer.start()]);
  try {
    const [first, second] = servers;
    second.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    const glue: dnsPacket.Answer = { name: 'ns.elsewhere.example', type: 'A', ttl: 300, data: '192.0.2.1' };
    for (const [what, make] of [
      ['RA', (real: Buffer) => referral(real, dnsPacket.RECURSION_AVAILABLE)],
      ['AA', (real: Buffer) => referral(real, dnsPacket.AUTHORITATIVE_ANSWER)],
      ['additional', (real: Buffer) => referral(real, 0, [glue])],
    ] as const) {
      first.rules.length = 0;
      first.log.length = 0;
      second.log.length = 0;
      first.rule({ action: { replace: make } });
      const answer = await dnsClient([first, second]).query('api.test.', 'A');
      t.is(answer.kind, 'NODATA', what);
      t.is(second.log.length, 0, `${what}: the next server is not asked`);
    }
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('when every search-list name fails, the error names the name as written, with what each one gave', async (t) => {
  await withServer(async (server) => {
    server.rule({ action: { rcode: 2 } });
    const error = await t.throwsAsync(dnsClient([server], { search: ['a.test', 'b.test'], attempts: 1 }).query('svc', 'A'), { instanceOf: DnsError });
    t.is(error?.question, 'svc A');
    t.is(error?.reason, 'SERVFAIL');
    t.regex(error?.message ?? '', /^DNS svc A: SERVFAIL \(tried svc\.a\.test: SERVFAIL, svc\.b\.test: SERVFAIL, svc: SERVFAIL\)$/);
    t.true(error?.cause instanceof DnsError);
  });
});

test('FORMERR to an EDNS query: asked again without OPT, and without it from then on', async (t) => {
  await withServer(async (server) => {
    server.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    server.rule({ action: { formerrOnEdns: true } });
    const dns = dnsClient([server]);
    t.deepEqual((await dns.query('api.test.', 'A')).addresses, ['127.0.0.11']);
    await dns.query('api.test.', 'A');
    t.deepEqual(
      server.log.map((q) => q.edns),
      [true, false, false],
    );
  });
});

test('the per-try timeout doubles each round, and the last failure is reported', async (t) => {
  await withServer(async (server) => {
    server.rule({ action: { drop: true } });
    const clock = new FakeClock();
    const query = dnsClient([server], { timeout: 100, attempts: 3 }, clock).query('api.test.', 'A');
    const failed = t.throwsAsync(query, { instanceOf: DnsError });
    for (const [n, wait] of [
      [1, 100],
      [2, 200],
      [3, 400],
    ] as const) {
      await until(() => server.log.length === n && clock.pending === 1, { what: `try ${n} to be sent` });
      clock.advance(wait - 1);
      t.is(server.log.length, n, `try ${n} still waits at ${wait - 1} ms`);
      clock.advance(1);
    }
    t.is((await failed)?.reason, 'TIMEOUT');
    t.is(server.log.length, 3);
  });
});

test('the overall deadline bounds a lookup whatever the attempts', async (t) => {
  await withServer(async (server) => {
    server.rule({ action: { drop: true } });
    const clock = new FakeClock();
    const failed = t.throwsAsync(dnsClient([server], { timeout: 100, attempts: 5, deadline: 250 }, clock).query('api.test.', 'A'));
    await until(() => server.log.length === 1 && clock.pending === 1, { what: 'the first try' });
    clock.advance(100);
    await until(() => server.log.length === 2 && clock.pending === 1, { what: 'the second try' });
    clock.advance(150); // the second try only had 150 ms left of the 250
    t.is((await failed)?.message.includes('TIMEOUT'), true);
    t.is(server.log.length, 2);
  });
});

// Serial: other tests of this file open sockets of their own, which would count as leaks.
test.serial('an abort ends the lookup at once and releases the socket', async (t) => {
  await withServer(async (server) => {
    server.rule({ action: { drop: true } });
    const baseline = activeResources();
    const controller = new AbortController();
    const failed = t.throwsAsync(dnsClient([server]).query('api.test.', 'A', controller.signal), { instanceOf: DnsError });
    await until(() => server.log.length === 1, { what: 'the query to reach the server' });
    controller.abort();
    t.is((await failed)?.reason, 'ABORTED');
    t.deepEqual(await leftOver(baseline), {});
  });
});

test('an IPv6 name server on ::1, over UDP and TCP', async (t) => {
  await withServer(async (server) => {
    for (let i = 1; i <= 60; i++) server.add({ name: 'big.api.test', type: 'AAAA', data: `fd00::${i.toString(16)}` });
    server.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    const dns = dnsClient([server]);
    t.deepEqual((await dns.query('api.test.', 'A')).addresses, ['127.0.0.11']);
    const big = await dns.query('big.api.test.', 'AAAA');
    t.is(big.addresses.length, 60);
    t.is(big.transport, 'tcp');
  }, '::1');
});

test('names are checked before anything is sent', async (t) => {
  await withServer(async (server) => {
    const dns = dnsClient([server]);
    for (const name of [`${'a'.repeat(64)}.test`, `${'abcdefghi.'.repeat(26)}test`, 'a..test', 'spa ce.test', '', '.']) {
      const error = await t.throwsAsync(dns.query(name, 'A'), { instanceOf: DnsError }, name);
      t.is(error?.reason, 'BAD_NAME');
    }
    t.is(server.log.length, 0);
  });
});

test('the search list: short names get the domains first, long names are tried as they are first, absolute names alone', async (t) => {
  await withServer(async (server) => {
    server.add({ name: 'svc.b.test', type: 'A', data: '127.0.0.31' }, { name: 'x.y.test', type: 'A', data: '127.0.0.32' });
    const dns = dnsClient([server], { search: ['a.test', 'b.test'], ndots: 2 });
    t.deepEqual((await dns.query('svc', 'A')).addresses, ['127.0.0.31']);
    t.deepEqual(
      server.log.map((q) => q.name),
      ['svc.a.test', 'svc.b.test'],
    );
    server.log.length = 0;
    t.deepEqual((await dns.query('x.y.test', 'A')).addresses, ['127.0.0.32']);
    t.deepEqual(
      server.log.map((q) => q.name),
      ['x.y.test'],
    );
    server.log.length = 0;
    const nx = await dns.query('nothing.test.', 'A');
    t.is(nx.kind, 'NXDOMAIN');
    t.deepEqual(
      server.log.map((q) => q.name),
      ['nothing.test'],
    );
  });
});

test('over the search list, a negative answer without SOA keeps the merged negative uncached', async (t) => {
  await withServer(async (server) => {
    server.soa = { ttl: 60, minimum: 60 };
    // dnsmasq's --local names come without SOA: strip it from this one.
    server.rule({ name: 'svc.a.test', action: { replace: (real) => dnsPacket.encode({ ...dnsPacket.decode(real), authorities: [] }) } });
    const nx = await dnsClient([server], { search: ['a.test'] }).query('svc', 'A');
    t.is(nx.kind, 'NXDOMAIN');
    t.is(nx.ttl, 0, 'not the 60 s of the other name');
    t.deepEqual(
      server.log.map((q) => q.name),
      ['svc.a.test', 'svc'],
    );
  });
});

test('a failure on one search domain is not turned into NXDOMAIN by the next', async (t) => {
  await withServer(async (server) => {
    server.rule({ name: 'svc.a.test', action: { rcode: 2 } });
    const error = await t.throwsAsync(dnsClient([server], { search: ['a.test', 'b.test'], attempts: 1 }).query('svc', 'A'), { instanceOf: DnsError });
    t.is(error?.reason, 'SERVFAIL');
    t.is(server.log.length, 3, 'svc.a.test, svc.b.test, svc');
  });
});

test('rotate spreads the first try over the servers', async (t) => {
  const servers = await Promise.all([DnsTestServer.start(), DnsTestServer.start()]);
  try {
    for (const s of servers) s.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    const dns = dnsClient(servers, { rotate: true });
    for (let i = 0; i < 4; i++) await dns.query('api.test.', 'A');
    t.deepEqual(
      servers.map((s) => s.log.length),
      [2, 2],
    );
  } finally {
    await Promise.all(servers.map((s) => s.close()));
  }
});

test('each try uses a new source port and a new ID', async (t) => {
  await withServer(async (server) => {
    server.add({ name: 'api.test', type: 'A', data: '127.0.0.11' });
    const dns = dnsClient([server]);
    for (let i = 0; i < 20; i++) await dns.query('api.test.', 'A');
    t.true(new Set(server.log.map((q) => q.port)).size >= 15, 'ports vary');
    t.true(new Set(server.log.map((q) => q.id)).size >= 15, 'IDs vary');
  });
});

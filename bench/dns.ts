// DNS: (1) lookup latency and queries/s of our stub client vs Node's dns.promises.Resolver (c-ares),
// against the same local dnsmasq, in one run, concurrency 1 and 16 (target ratio >= 1.0);
// (2) DNS packets sent per minute for one name at TTL 5 s by a resolver that runs for an hour of
// fake-clock time against the embedded DNS server (target <= 15 per query type).
import { Resolver as NodeResolver } from 'node:dns/promises';
import { DnsTestServer } from '../fixtures/dns/DnsTestServer.ts';
import { Dnsmasq } from '../fixtures/dnsmasq/Dnsmasq.ts';
import { dnsClient, resolverOf } from '../test/helpers/dns.ts';
import { FakeClock } from '../test/helpers/FakeClock.ts';
import { compare, table, writeResults } from './lib.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MS = Number(process.env.BENCH_MS ?? 1500);
const NAME = 'api.bench.test';

export async function run(): Promise<unknown> {
  const speed = await lookupSpeed();
  const packets = await packetsPerMinute();
  return { lookup: speed, packetsPerMinute: packets };
}

async function lookupSpeed(): Promise<unknown[]> {
  // TTL 0: nothing may be answered from a cache, c-ares's own query cache included.
  const dnsmasq = await Dnsmasq.start({
    zone: 'bench.test',
    ttl: 0,
    hostRecords: ['127.0.0.11', '127.0.0.12', '127.0.0.13'].map((address) => ({ name: NAME, address, ttl: 0 })),
  });
  const rows: Array<Record<string, string | number>> = [];
  const results: unknown[] = [];
  try {
    const ours = dnsClient([dnsmasq]);
    const node = new NodeResolver({ timeout: 2000, tries: 2 });
    node.setServers([dnsmasq.address]);
    const viaOurs = async (): Promise<void> => {
      const answer = await ours.query(`${NAME}.`, 'A');
      if (answer.addresses.length !== 3) throw new Error(`ours: ${answer.addresses.length} addresses`);
    };
    const viaNode = async (): Promise<void> => {
      const addresses = await node.resolve4(NAME, { ttl: true });
      if (addresses.length !== 3) throw new Error(`node: ${addresses.length} addresses`);
    };
    for (const concurrency of [1, 16]) {
      const { row: medians, runs } = await compare({ node: viaNode, ours: viaOurs }, { rounds: ROUNDS, concurrency, ms: MS, unit: 'qps' });
      const row = { concurrency, ...medians };
      rows.push(row);
      results.push({ ...row, runs });
    }
  } finally {
    await dnsmasq.stop();
  }
  console.log('A lookup against local dnsmasq (TTL 0, no cache): our stub client vs node:dns Resolver (c-ares) (target ratio >= 1.0)');
  console.log(table(rows));
  return results;
}

/**
 * An hour of fake-clock time in 100 ms steps; every query really goes over UDP to the embedded
 * server, which counts them. Three setups: SRV with glue (one question), and a dns: target whose
 * name has A records only, with the NODATA for AAAA carrying an SOA (CoreDNS, BIND) or not (dnsmasq).
 */
async function packetsPerMinute(): Promise<unknown[]> {
  const MINUTES = 60;
  const setups: Array<{ setup: string; target: string; soa: boolean }> = [
    { setup: 'dns+srv, glue', target: '_https._tcp.bench.test.', soa: true },
    { setup: 'dns:, AAAA NODATA with SOA (min 5)', target: 'api.bench.test.:6443', soa: true },
    { setup: 'dns:, AAAA NODATA without SOA', target: 'api.bench.test.:6443', soa: false },
  ];
  const rows: Array<Record<string, string | number>> = [];
  for (const { setup, target, soa } of setups) {
    const server = await DnsTestServer.start();
    server.add(
      { name: '_https._tcp.bench.test', type: 'SRV', ttl: 5, data: { priority: 0, weight: 1, port: 6443, target: 'api.bench.test' } },
      { name: 'api.bench.test', type: 'A', ttl: 5, data: '127.0.0.11' },
    );
    if (soa) server.soa = { ttl: 5, minimum: 5 };
    const clock = new FakeClock();
    const scheme = target.startsWith('_') ? 'dns+srv' : 'dns';
    const resolver = resolverOf(`${scheme}:///${target}`, server, clock);
    resolver.start({ endpoints: () => {}, error: (e) => console.error(e) });
    for (let t = 0; t < MINUTES * 60_000; t += 100) {
      await resolver.settled();
      clock.advance(100);
    }
    await resolver.settled();
    await resolver.close();
    await server.close();
    const perType = (type: string): number => Number((server.queries(undefined, type).length / MINUTES).toFixed(1));
    rows.push({
      setup,
      'packets/min': Number((server.log.length / MINUTES).toFixed(1)),
      'SRV/min': perType('SRV'),
      'A/min': perType('A'),
      'AAAA/min': perType('AAAA'),
    });
  }
  console.log(`\nDNS packets per minute for one name at TTL 5 s, fake clock, ${MINUTES} simulated minutes (target <= 15 per question)`);
  console.log(table(rows));
  return rows;
}

if (import.meta.main) writeResults('dns', await run());

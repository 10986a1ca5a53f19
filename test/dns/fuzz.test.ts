// Property tests: bytes from the network never throw out of the DNS code and never reach the
// endpoint set unless they are a well-formed answer to our exact question. `npm test` runs a bounded
// number of cases; `npm run fuzz` runs many more (FUZZ_RUNS: ten times that at the parser, that
// many over UDP to the resolver).
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import * as dnsPacket from 'dns-packet';
import type { Answer } from 'dns-packet';
import fc from 'fast-check';
import { parseResponse, type Query } from '../../src/dns/wire.ts';
import { withResolver, type ResolverHarness } from '../helpers/dns.ts';
import { until } from '../helpers/poll.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const SRV = '_https._tcp.api.test';

/**
 * Realistic answers to mutate: SRV with glue, many A records, a CNAME chain, NXDOMAIN with SOA;
 * each with and without a trailing OPT record (without it, a cut lands in an address record).
 */
const samples: Array<{ query: Query; packet: Buffer }> = [true, false].flatMap((edns) => {
  const opt = { type: 'OPT', name: '.', udpPayloadSize: 1232 } as unknown as Answer;
  const withOpt = (list: Answer[]): Answer[] => (edns ? list : list.filter((r) => r.type !== 'OPT'));
  const make = (name: string, type: Query['type'], answers: Answer[], extra: Partial<dnsPacket.Packet> = {}): { query: Query; packet: Buffer } => ({
    query: { id: 0x1234, name, type, edns: true },
    packet: dnsPacket.encode({
      type: 'response',
      id: 0x1234,
      flags: dnsPacket.AUTHORITATIVE_ANSWER,
      questions: [{ name, type }],
      answers,
      ...extra,
      additionals: withOpt(extra.additionals ?? [opt]),
    }),
  });
  return [
    make(SRV, 'SRV', [
      { name: SRV, type: 'SRV', ttl: 5, data: { priority: 0, weight: 33, port: 6443, target: 'n1.api.test' } },
      { name: SRV, type: 'SRV', ttl: 5, data: { priority: 1, weight: 33, port: 6443, target: 'n2.api.test' } },
    ], {
      additionals: [
        { name: 'n1.api.test', type: 'A', ttl: 5, data: '127.0.0.11' },
        { name: 'n2.api.test', type: 'AAAA', ttl: 5, data: '::1' },
        opt,
      ],
    }),
    make('api.test', 'A', Array.from({ length: 8 }, (_, i) => ({ name: 'api.test', type: 'A' as const, ttl: 30, data: `127.0.0.${i + 1}` }))),
    make('alias.api.test', 'AAAA', [
      { name: 'alias.api.test', type: 'CNAME', ttl: 5, data: 'svc.api.test' },
      { name: 'svc.api.test', type: 'AAAA', ttl: 5, data: 'fd00::1' },
    ]),
    make('missing.api.test', 'A', [], {
      flags: 3,
      authorities: [{ name: 'api.test', type: 'SOA', ttl: 5, data: { mname: 'ns.api.test', rname: 'h.api.test', serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 5 } }],
    }),
  ];
});

const mutation = fc.array(fc.record({ at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 4 });

function mutate(packet: Buffer, changes: ReadonlyArray<{ at: number; value: number }>): Buffer {
  const copy = Buffer.from(packet);
  for (const { at, value } of changes) copy[at % copy.length] = value;
  return copy;
}

/** Every record in an accepted response is plausible: the garbage dns-packet lets through is not. */
function plausible(response: NonNullable<ReturnType<typeof parseResponse>>): boolean {
  return [...response.answers, ...response.authorities, ...response.additionals].every((r) => {
    if (r.ttl < 0 || r.ttl > 0x7fffffff) return false;
    if (r.type === 'A') return isIP(r.data) === 4;
    if (r.type === 'AAAA') return isIP(r.data) === 6;
    if (r.type === 'SRV') return [r.data.port, r.data.priority, r.data.weight].every((n) => Number.isInteger(n) && n >= 0 && n <= 0xffff);
    return true;
  });
}

/** Runs `check` as a property over `runs` cases and logs how many ran in how long. */
function counted(t: ExecutionContext, what: string, runs: number, check: () => void): void {
  const started = performance.now();
  check();
  t.log(`DNS ${what}: ${runs} cases in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

test('parser: random bytes never throw and are never taken for an answer', (t) => {
  counted(t, 'parser, random bytes', RUNS * 10, () => fc.assert(
    fc.property(fc.uint8Array({ maxLength: 700 }), fc.constantFrom(...samples), (bytes, { query }) => {
      return parseResponse(Buffer.from(bytes), query) === undefined;
    }),
    { numRuns: RUNS * 10 },
  ));
  t.pass();
});

test('parser: mutated answers never throw, and what is accepted is plausible', (t) => {
  counted(t, 'parser, mutated answers', RUNS * 10, () => fc.assert(
    fc.property(fc.constantFrom(...samples), mutation, ({ query, packet }, changes) => {
      const parsed = parseResponse(mutate(packet, changes), query);
      return parsed === undefined || plausible(parsed);
    }),
    { numRuns: RUNS * 10 },
  ));
  t.pass();
});

test('parser: every truncation of an answer is rejected', (t) => {
  counted(t, 'parser, truncations', RUNS * 10, () => fc.assert(
    fc.property(fc.constantFrom(...samples), fc.nat(), ({ query, packet }, cut) => {
      return parseResponse(packet.subarray(0, cut % packet.length), query) === undefined;
    }),
    { numRuns: RUNS * 10 },
  ));
  t.pass();
});

/** A resolver on an SRV name with two targets, one A and one AAAA. */
async function withSrvResolver(run: (h: ResolverHarness) => Promise<void>): Promise<void> {
  await withResolver(
    `dns+srv:///${SRV}.`,
    (server) =>
      server.add(
        { name: SRV, type: 'SRV', ttl: 300, data: { priority: 0, weight: 50, port: 6443, target: 'n1.api.test' } },
        { name: SRV, type: 'SRV', ttl: 300, data: { priority: 1, weight: 10, port: 7443, target: 'n2.api.test' } },
        { name: 'n1.api.test', type: 'A', ttl: 300, data: '127.0.0.11' },
        { name: 'n2.api.test', type: 'AAAA', ttl: 300, data: '::1' },
      ),
    run,
  );
}

/** A datagram the server sends ahead of the real answer: random, a cut real answer, or a mutated stray one. */
const junk = fc.oneof(
  fc.record({ kind: fc.constant('random' as const), bytes: fc.uint8Array({ maxLength: 600 }) }),
  fc.record({ kind: fc.constant('truncated' as const), cut: fc.nat() }),
  fc.record({ kind: fc.constant('stray' as const), changes: mutation }),
);

function junkFor(spec: typeof junk extends fc.Arbitrary<infer T> ? T : never, real: Buffer): Buffer {
  if (spec.kind === 'random') return Buffer.from(spec.bytes);
  if (spec.kind === 'truncated') return real.subarray(0, spec.cut % real.length);
  // An answer to another query: another ID, and a question name that differs in five bytes, so
  // that four mutated bytes can never turn it into an answer to ours.
  const stray = Buffer.from(real);
  stray.writeUInt16BE(stray.readUInt16BE(0) ^ 0xa5a5, 0);
  stray.write('_xxxx', 13, 'latin1'); // over "_https" in the question
  return mutate(stray, spec.changes);
}

test('resolver: random, truncated and stray datagrams before the real answer never throw and never change the set', async (t) => {
  await withSrvResolver(async (h) => {
    t.is(h.sets.length, 1);
    const good = h.sets[0];
    await fc.assert(
      fc.asyncProperty(junk, async (spec) => {
        h.server.rule({ times: 1, action: { before: (real) => [junkFor(spec, real)] } });
        h.clock.advance(1000);
        await h.resolver.resolveNow();
        return h.sets.length === 1 && h.errors.length === 0;
      }),
      { numRuns: RUNS },
    );
    t.is(h.sets.at(-1), good);
    t.deepEqual(h.errors, []);
    t.true(h.server.log.length > RUNS, 'every case went over the wire');
    t.log(`DNS resolver, junk before the answer: ${RUNS} cases over UDP`);
  });
});

test('resolver: a mutated answer alone never throws; the set stays or holds only well-formed endpoints', async (t) => {
  await withSrvResolver(async (h) => {
    await fc.assert(
      fc.asyncProperty(mutation, async (changes) => {
        let sent = false;
        h.server.rule({
          times: 1,
          action: {
            replace: (real) => {
              sent = true;
              return mutate(real, changes);
            },
          },
        });
        h.clock.advance(1000);
        const round = h.resolver.resolveNow();
        await until(() => sent, { what: 'the mutated answer to be sent' });
        await sleep(2);
        h.clock.advance(1000); // the per-try timeout, should the client still be waiting
        await round;
        const set = h.sets.at(-1) ?? [];
        return set.length > 0 && set.every((e) => isIP(e.address) !== 0 && Number.isInteger(e.port) && e.port >= 1 && e.port <= 65535);
      }),
      { numRuns: RUNS },
    );
    t.log(`DNS resolver, mutated answers: ${RUNS} cases over UDP`);
    t.pass();
  });
});

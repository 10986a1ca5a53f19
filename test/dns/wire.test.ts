import test from 'ava';
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet } from 'dns-packet';
import { encodeQuery, parseResponse, wellFormed, type Query } from '../../src/dns/wire.ts';

const query: Query = { id: 4242, name: 'api.test', type: 'A', edns: true };

function response(overrides: Partial<Packet> = {}, answers: Answer[] = [{ name: 'api.test', type: 'A', ttl: 30, data: '127.0.0.11' }]): Buffer {
  return dnsPacket.encode({ type: 'response', id: 4242, flags: 0, questions: [{ name: 'api.test', type: 'A', class: 'IN' }], answers, ...overrides });
}

test('the query: RD set, one question, OPT with payload 1232 only when asked', (t) => {
  const withEdns = dnsPacket.decode(encodeQuery(query));
  t.true(withEdns.flag_rd);
  t.is(withEdns.id, 4242);
  t.deepEqual(withEdns.questions, [{ name: 'api.test', type: 'A', class: 'IN' }]);
  t.is((withEdns.additionals?.[0] as { udpPayloadSize: number }).udpPayloadSize, 1232);
  t.deepEqual(dnsPacket.decode(encodeQuery({ ...query, edns: false })).additionals, []);
});

test('a matching answer is accepted; the question matches case-insensitively', (t) => {
  t.deepEqual(parseResponse(response(), query)?.answers, [{ name: 'api.test', type: 'A', ttl: 30, data: '127.0.0.11' }]);
  t.truthy(parseResponse(response({ questions: [{ name: 'API.Test', type: 'A' }] }), query));
});

test('wrong ID, a query, another opcode, another question, two questions or another class: rejected', (t) => {
  t.is(parseResponse(response({ id: 4243 }), query), undefined);
  t.is(parseResponse(response({ type: 'query' }), query), undefined);
  t.is(parseResponse(response({ flags: 2 << 11 }), query), undefined, 'opcode STATUS');
  t.is(parseResponse(response({ questions: [{ name: 'api2.test', type: 'A' }] }), query), undefined);
  t.is(parseResponse(response({ questions: [{ name: 'api.test', type: 'AAAA' }] }), query), undefined);
  t.is(parseResponse(response({ questions: [{ name: 'api.test', type: 'A', class: 'CH' }] }), query), undefined);
  t.is(
    parseResponse(response({ questions: [{ name: 'api.test', type: 'A' }, { name: 'api.test', type: 'A' }] }), query),
    undefined,
  );
  t.is(parseResponse(response({ questions: [] }), query), undefined, 'no question on a NOERROR');
});

test('FORMERR and NOTIMP may come back without the question', (t) => {
  t.is(parseResponse(response({ flags: 1, questions: [] }, []), query)?.rcode, 1);
  t.is(parseResponse(response({ flags: 4, questions: [] }, []), query)?.rcode, 4);
});

test('the extended RCODE from OPT is merged in (BADVERS = 16)', (t) => {
  const opt = { type: 'OPT', name: '.', udpPayloadSize: 1232, extendedRcode: 1 } as unknown as Answer;
  t.is(parseResponse(response({ additionals: [opt] }, []), query)?.rcode, 16);
});

test('every truncation of a good answer is rejected', (t) => {
  const good = response({}, [
    { name: 'api.test', type: 'A', ttl: 30, data: '127.0.0.11' },
    { name: 'api.test', type: 'A', ttl: 30, data: '127.0.0.12' },
  ]);
  for (let length = 0; length < good.length; length++) {
    t.is(parseResponse(good.subarray(0, length), query), undefined, `cut to ${length} bytes`);
  }
});

test('an A record whose RDLENGTH is not 4 is rejected (dns-packet ignores RDLENGTH)', (t) => {
  const bad = Buffer.from(response());
  // The RDLENGTH of the only record sits 6 bytes before the end: 2 bytes, then the 4 address bytes.
  bad.writeUInt16BE(5, bad.length - 6);
  t.false(wellFormed(bad));
  t.is(parseResponse(bad, query), undefined);
});

test('TTLs with the top bit set count as 0 (RFC 2181 §8)', (t) => {
  t.is(parseResponse(response({}, [{ name: 'api.test', type: 'A', ttl: 0x80000001, data: '127.0.0.11' }]), query)?.answers[0]?.ttl, 0);
  t.is(parseResponse(response({}, [{ name: 'api.test', type: 'A', ttl: 0x7fffffff, data: '127.0.0.11' }]), query)?.answers[0]?.ttl, 0x7fffffff);
});

test('SRV records: the target "." is kept, a bad target name rejects the answer', (t) => {
  const srvQuery: Query = { ...query, type: 'SRV', name: '_https._tcp.api.test' };
  const srv = (target: string): Buffer =>
    dnsPacket.encode({
      type: 'response',
      id: 4242,
      questions: [{ name: '_https._tcp.api.test', type: 'SRV' }],
      answers: [{ name: '_https._tcp.api.test', type: 'SRV', ttl: 5, data: { priority: 1, weight: 2, port: 443, target } }],
    });
  t.deepEqual(parseResponse(srv('.'), srvQuery)?.answers[0]?.data, { priority: 1, weight: 2, port: 443, target: '.' });
  t.is(parseResponse(srv('bad name.test'), srvQuery), undefined);
});

test('records of types we do not use are skipped, not trusted', (t) => {
  const parsed = parseResponse(
    response({}, [
      { name: 'api.test', type: 'TXT', ttl: 1, data: 'hello' },
      { name: 'api.test', type: 'A', ttl: 30, data: '127.0.0.11' },
    ]),
    query,
  );
  t.deepEqual(
    parsed?.answers.map((a) => a.type),
    ['A'],
  );
});

test('compression pointers that run off the end are rejected', (t) => {
  const bad = Buffer.from(response());
  bad[12] = 0xc0; // the question name becomes a pointer...
  bad[13] = 0xff; // ...to offset 255, outside the message
  t.is(parseResponse(bad, query), undefined);
});

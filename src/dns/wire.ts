// The DNS message as we send and accept it. dns-packet is only the codec: it decodes truncated
// records into garbage without throwing, so every datagram is checked structurally first and every
// record we use is validated after decoding. Nothing here trusts a byte from the network.
import { isIPv4, isIPv6 } from 'node:net';
import * as dnsPacket from 'dns-packet';
import type { Answer, DecodedPacket } from 'dns-packet';
import { nameProblem, sameName } from './names.ts';

export type QueryType = 'A' | 'AAAA' | 'SRV';

export interface Query {
  id: number;
  name: string;
  type: QueryType;
  /** Send an EDNS0 OPT record (payload 1232). */
  edns: boolean;
}

export interface SrvData {
  priority: number;
  weight: number;
  port: number;
  target: string;
}

/** The records we use, validated; everything else on the wire is dropped. */
export type WireRecord =
  | { name: string; type: 'A' | 'AAAA' | 'CNAME'; ttl: number; data: string }
  | { name: string; type: 'SRV'; ttl: number; data: SrvData }
  | { name: string; type: 'SOA'; ttl: number; data: { minimum: number } };

export interface Response {
  /** Full RCODE: header bits plus the OPT record's extended bits (RFC 6891 §6.1.3). */
  rcode: number;
  truncated: boolean;
  /**
   * A referral rather than an answer: NOERROR with no answer record, neither authoritative nor
   * recursion-available, and nothing in the additional section but our EDNS OPT (a server that is
   * lame for the name). glibc's res_send moves on to the next server ("referred query").
   */
  referral: boolean;
  answers: WireRecord[];
  authorities: WireRecord[];
  additionals: WireRecord[];
}

export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;

/** DNS Flag Day 2020: large enough for most answers, small enough to avoid IP fragmentation. */
const EDNS_PAYLOAD = 1232;

const TYPE_CODE = { A: 1, CNAME: 5, SOA: 6, AAAA: 28, SRV: 33 } as const;

type Decoded = DecodedPacket & { rcode?: string; opcode?: string };

export function encodeQuery(query: Query): Buffer {
  return dnsPacket.encode({
    type: 'query',
    id: query.id,
    // A stub resolver asks for recursion.
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [{ name: query.name, type: query.type, class: 'IN' }],
    // @types/dns-packet's OptAnswer demands decode-only fields; the encoder needs only these.
    additionals: query.edns ? [{ type: 'OPT', name: '.', udpPayloadSize: EDNS_PAYLOAD } as unknown as Answer] : [],
  });
}

/**
 * `buf` decoded as the answer to `query`, or `undefined` when it is not one: malformed, truncated,
 * a query, another opcode, another ID or another question. Never throws.
 */
export function parseResponse(buf: Buffer, query: Query): Response | undefined {
  if (!wellFormed(buf)) return undefined;
  let packet: Decoded;
  try {
    packet = dnsPacket.decode(buf);
  } catch {
    return undefined;
  }
  if (dnsPacket.decode.bytes > buf.length) return undefined;
  if (packet.type !== 'response' || packet.id !== query.id || packet.opcode !== 'QUERY') return undefined;
  const flags = packet.flags ?? 0;
  const opt = (packet.additionals ?? []).find((r) => r.type === 'OPT') as { extendedRcode?: number } | undefined;
  const rcode = ((opt?.extendedRcode ?? 0) << 4) | (flags & 0xf);
  const questions = packet.questions ?? [];
  // A server that cannot parse our query may answer FORMERR/NOTIMP without echoing it (RFC 6891 §7).
  const bareError = questions.length === 0 && (rcode === RCODE.FORMERR || rcode === RCODE.NOTIMP);
  if (!bareError) {
    const q = questions[0];
    if (questions.length !== 1 || !q || q.type !== query.type || (q.class ?? 'IN') !== 'IN' || !sameName(q.name, query.name)) return undefined;
  }
  const answers = records(packet.answers);
  const authorities = records(packet.authorities);
  const additionals = records(packet.additionals);
  if (!answers || !authorities || !additionals) return undefined;
  // Header counts, not what `records` kept: glibc looks at ANCOUNT and ARCOUNT. The OPT record is
  // not counted, since glibc sends none by default and so never sees one come back.
  const opts = (packet.additionals ?? []).filter((r) => r.type === 'OPT').length;
  const referral = rcode === RCODE.NOERROR && buf.readUInt16BE(6) === 0 && !packet.flag_aa && !packet.flag_ra && buf.readUInt16BE(10) - opts === 0;
  return { rcode, truncated: packet.flag_tc, referral, answers, authorities, additionals };
}

/** Validated copies of the records we use; `undefined` if any of them is implausible. */
function records(list: readonly Answer[] | undefined): WireRecord[] | undefined {
  const out: WireRecord[] = [];
  for (const r of list ?? []) {
    if (r.type === 'OPT' || ('class' in r && r.class !== undefined && r.class !== 'IN')) continue;
    const raw = 'ttl' in r ? r.ttl : undefined;
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > 0xffffffff || typeof r.name !== 'string') return undefined;
    // RFC 2181 §8: a TTL with the top bit set is treated as zero.
    const ttl = raw > 0x7fffffff ? 0 : raw;
    switch (r.type) {
      case 'A':
      case 'AAAA':
        if (typeof r.data !== 'string' || !(r.type === 'A' ? isIPv4(r.data) : isIPv6(r.data))) return undefined;
        out.push({ name: r.name, type: r.type, ttl, data: r.data });
        break;
      case 'CNAME':
        if (typeof r.data !== 'string' || nameProblem(r.data) !== undefined) return undefined;
        out.push({ name: r.name, type: 'CNAME', ttl, data: r.data });
        break;
      case 'SRV': {
        const { priority, weight, port, target } = r.data;
        if (![priority, weight, port].every((n) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 0xffff)) return undefined;
        if (typeof target !== 'string' || (target !== '.' && target !== '' && nameProblem(target) !== undefined)) return undefined;
        out.push({ name: r.name, type: 'SRV', ttl, data: { priority: priority!, weight: weight!, port, target: target === '' ? '.' : target } });
        break;
      }
      case 'SOA': {
        const minimum = r.data.minimum;
        if (typeof minimum !== 'number' || !Number.isInteger(minimum) || minimum < 0) return undefined;
        out.push({ name: r.name, type: 'SOA', ttl, data: { minimum: minimum > 0x7fffffff ? 0 : minimum } });
        break;
      }
      default:
        break; // types we do not use are not looked at
    }
  }
  return out;
}

/**
 * Walks the message as RFC 1035 lays it out, without decoding: every count is honoured, every
 * record's RDLENGTH stays inside the buffer and matches what its type needs (A: 4, AAAA: 16, SRV:
 * 6 + a name, CNAME: a name, SOA: two names + 20). This catches the truncated and mis-sized
 * records that dns-packet would decode into wrong data without complaint.
 */
export function wellFormed(buf: Buffer): boolean {
  if (buf.length < 12) return false;
  let offset = 12;
  for (let i = buf.readUInt16BE(4); i > 0; i--) {
    offset = skipName(buf, offset);
    if (offset < 0 || offset + 4 > buf.length) return false;
    offset += 4;
  }
  const records = buf.readUInt16BE(6) + buf.readUInt16BE(8) + buf.readUInt16BE(10);
  for (let i = records; i > 0; i--) {
    offset = skipName(buf, offset);
    if (offset < 0 || offset + 10 > buf.length) return false;
    const type = buf.readUInt16BE(offset);
    const length = buf.readUInt16BE(offset + 8);
    offset += 10;
    const end = offset + length;
    if (end > buf.length) return false;
    switch (type) {
      case TYPE_CODE.A:
        if (length !== 4) return false;
        break;
      case TYPE_CODE.AAAA:
        if (length !== 16) return false;
        break;
      case TYPE_CODE.CNAME:
        if (skipName(buf, offset) !== end) return false;
        break;
      case TYPE_CODE.SRV:
        if (length < 7 || skipName(buf, offset + 6) !== end) return false;
        break;
      case TYPE_CODE.SOA: {
        const afterNames = skipName(buf, skipName(buf, offset));
        if (afterNames < 0 || afterNames + 20 !== end) return false;
        break;
      }
      default:
        break;
    }
    offset = end;
  }
  return offset <= buf.length;
}

/** Offset just after the name that starts at `offset` (a pointer ends it), or -1 if it overruns. */
function skipName(buf: Buffer, offset: number): number {
  if (offset < 0) return -1;
  // 128 labels is the most a 255-octet name can hold.
  for (let labels = 0; labels < 128; labels++) {
    if (offset >= buf.length) return -1;
    const len = buf[offset]!;
    if (len === 0) return offset + 1;
    if ((len & 0xc0) === 0xc0) return offset + 2 <= buf.length ? offset + 2 : -1;
    if ((len & 0xc0) !== 0) return -1; // 0x40/0x80 label types are obsolete or unassigned
    offset += 1 + len;
  }
  return -1;
}

import { randomInt } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { DnsError, type DnsErrorReason } from './DnsError.ts';
import { endpointKey } from '../net/endpointKey.ts';
import { canonical, nameProblem, sameName, searchCandidates } from './names.ts';
import { readResolvConf, type NameServer } from './ResolvConf.ts';
import { exchangeTcp, exchangeUdp } from './transport.ts';
import { RCODE, type QueryType, type Response, type SrvData, type WireRecord } from './wire.ts';

export interface DnsClientConfig {
  servers: readonly NameServer[];
  search: readonly string[];
  ndots: number;
  /** Milliseconds for the first try at each server; doubles every round (RFC 1035 §4.2.1). */
  timeout: number;
  /** Rounds over all servers. */
  attempts: number;
  /** Start each lookup at the next server instead of the first (resolv.conf `rotate`). */
  rotate: boolean;
  /** Milliseconds one lookup may take in total, over every try, server and search domain. */
  deadline: number;
}

/** What `options.dns` may override; everything else comes from resolv.conf. */
export interface DnsClientOverrides {
  servers?: readonly NameServer[] | undefined;
  timeout?: number | undefined;
  attempts?: number | undefined;
}

export interface DnsAnswer {
  /** The name the records belong to: the query name after search-list expansion and CNAMEs. */
  name: string;
  type: QueryType;
  /** `records`, or the negative answer: the name does not exist, or has no record of this type. */
  kind: 'records' | 'NXDOMAIN' | 'NODATA';
  /** A/AAAA: the addresses. */
  addresses: readonly string[];
  /** SRV: the records, target `.` included. */
  srv: readonly SrvData[];
  /** SRV: addresses from the additional section, by canonical target name. */
  glue: ReadonlyMap<string, readonly string[]>;
  /**
   * Seconds, as the server said: the minimum over the CNAME chain, the records and the glue used;
   * for a negative answer min(SOA TTL, SOA MINIMUM) (RFC 2308 §5), 0 without an SOA (dnsmasq's
   * `--local`): such an answer is not to be cached (§5), and merged with others it must stay so.
   */
  ttl: number;
  transport: 'udp' | 'tcp';
}

type StringRecord = Extract<WireRecord, { data: string }>;

/** RFC 1034 says to bound CNAME chains; 8 is what common stub resolvers allow. */
const MAX_CNAME_HOPS = 8;
/** The most glibc waits in total; a background refresher has no reason to wait longer. */
const DEFAULT_DEADLINE = 10_000;

/**
 * A stub resolver on dns-packet: asks the configured servers in turn over UDP (TCP when the answer
 * is truncated), follows CNAMEs, applies the search list. Anything from the network is untrusted.
 */
export class DnsClient {
  readonly #clock: Clock;
  readonly #load: () => Promise<DnsClientConfig>;
  #config: Promise<DnsClientConfig> | undefined;
  /** Servers that answered FORMERR/NOTIMP to EDNS: asked without it from then on (RFC 6891 §7). */
  readonly #noEdns = new Set<string>();
  #rotation = 0;

  constructor(config: DnsClientConfig | (() => Promise<DnsClientConfig>), clock: Clock) {
    this.#clock = clock;
    this.#load = typeof config === 'function' ? config : () => Promise.resolve(config);
  }

  /**
   * A client configured from `/etc/resolv.conf` (read once, on the first lookup), `LOCALDOMAIN`
   * and `RES_OPTIONS`, with `overrides` on top. `hostname` (default: the system's) gives the
   * search list when nothing else does.
   */
  static fromSystem(overrides: DnsClientOverrides, clock: Clock, path?: string, hostname?: string): DnsClient {
    return new DnsClient(async () => {
      const conf = await readResolvConf(path, process.env, hostname);
      // glibc waits 5 s per try by default; a refresher that can serve stale answers should not.
      const timeout = overrides.timeout ?? Math.min(conf.timeout * 1000, 2000);
      return {
        servers: overrides.servers ?? conf.nameservers,
        search: conf.search,
        ndots: conf.ndots,
        timeout,
        attempts: overrides.attempts ?? conf.attempts,
        rotate: conf.rotate,
        deadline: Math.max(DEFAULT_DEADLINE, timeout),
      };
    }, clock);
  }

  /**
   * Looks `name` up. Resolves with the records or a negative answer (NXDOMAIN/NODATA); rejects
   * with a `DnsError` when no server gave an answer (timeouts, SERVFAIL, REFUSED, network errors).
   */
  async query(name: string, type: QueryType, signal?: AbortSignal): Promise<DnsAnswer> {
    const problem = nameProblem(name);
    if (problem) throw new DnsError('BAD_NAME', `${name} ${type}`, `the name ${problem}`);
    this.#config ??= this.#load();
    const config = await this.#config;
    const deadline = this.#clock.now() + config.deadline;
    let negative: DnsAnswer | undefined;
    let failure: DnsError | undefined;
    const candidates = searchCandidates(name, config.search, config.ndots);
    const outcomes: string[] = [];
    for (const candidate of candidates) {
      try {
        const answer = await this.#resolve(candidate, type, config, deadline, signal);
        if (answer.kind === 'records') return answer;
        negative = { ...answer, ttl: Math.min(negative?.ttl ?? Infinity, answer.ttl) };
        outcomes.push(`${candidate}: ${answer.kind}`);
      } catch (error) {
        if (!(error instanceof DnsError) || error.reason === 'ABORTED') throw error;
        failure ??= error;
        outcomes.push(`${candidate}: ${error.reason}`);
      }
    }
    // Like glibc: after a failure, a later NXDOMAIN does not prove that the name does not exist
    // (its res_search then reports TRY_AGAIN), and the failure is the name's as written, not that
    // of one search-list name: each one's outcome goes in the detail.
    if (failure && candidates.length > 1) throw new DnsError(failure.reason, `${name} ${type}`, `tried ${outcomes.join(', ')}`, { cause: failure });
    if (failure) throw failure;
    return negative!;
  }

  /** One candidate name, following CNAMEs across queries when an answer stops mid-chain. */
  async #resolve(name: string, type: QueryType, config: DnsClientConfig, deadline: number, signal: AbortSignal | undefined): Promise<DnsAnswer> {
    const question = `${name} ${type}`;
    const seen = new Set([canonical(name)]);
    let current = name;
    let chainTtl = Infinity;
    for (;;) {
      const { response, transport } = await this.#ask(current, type, config, deadline, signal);
      const asked = current;
      for (;;) {
        const cname = response.answers.find((r): r is StringRecord => r.type === 'CNAME' && sameName(r.name, current));
        if (!cname) break;
        if (seen.size > MAX_CNAME_HOPS || seen.has(canonical(cname.data))) throw new DnsError('CNAME_LOOP', question, `at ${cname.data}`);
        seen.add(canonical(cname.data));
        chainTtl = Math.min(chainTtl, cname.ttl);
        current = cname.data;
      }
      const records = response.answers.filter((r) => r.type === type && sameName(r.name, current));
      if (records.length > 0) return positive(current, type, records, response, chainTtl, transport);
      // The server followed the chain but stopped before the records: ask for the target itself.
      if (response.rcode === RCODE.NOERROR && !sameName(current, asked)) continue;
      const soa = response.authorities.find((r) => r.type === 'SOA');
      const negativeTtl = soa?.type === 'SOA' ? Math.min(soa.ttl, soa.data.minimum) : 0;
      return {
        name: current,
        type,
        kind: response.rcode === RCODE.NXDOMAIN ? 'NXDOMAIN' : 'NODATA',
        addresses: [],
        srv: [],
        glue: new Map(),
        ttl: Math.min(chainTtl, negativeTtl),
        transport,
      };
    }
  }

  /**
   * glibc's server loop: `attempts` rounds over the servers, the per-try timeout doubling each
   * round, within the overall deadline. NOERROR and NXDOMAIN are answers, except a referral (a
   * lame server); anything else moves on.
   */
  async #ask(name: string, type: QueryType, config: DnsClientConfig, deadline: number, signal: AbortSignal | undefined): Promise<{ response: Response; transport: 'udp' | 'tcp' }> {
    const servers = config.servers;
    const start = config.rotate ? this.#rotation++ % servers.length : 0;
    let timeout = config.timeout;
    let lastError: DnsError | undefined;
    for (let attempt = 0; attempt < config.attempts; attempt++) {
      for (let i = 0; i < servers.length; i++) {
        const server = servers[(start + i) % servers.length]!;
        const remaining = deadline - this.#clock.now();
        if (remaining <= 0) throw lastError ?? new DnsError('TIMEOUT', `${name} ${type}`, `no answer within ${config.deadline} ms`);
        try {
          const result = await this.#askServer(server, name, type, Math.min(timeout, remaining), signal);
          const rcode = result.response.rcode;
          if (result.response.referral) lastError = new DnsError('REFERRAL', `${name} ${type} @${endpointKey(server)}`, 'no answer, not authoritative, no recursion');
          else if (rcode === RCODE.NOERROR || rcode === RCODE.NXDOMAIN) return result;
          else lastError = new DnsError(rcodeReason(rcode), `${name} ${type} @${endpointKey(server)}`, `rcode ${rcode}`);
        } catch (error) {
          if (!(error instanceof DnsError) || error.reason === 'ABORTED') throw error;
          lastError = error;
        }
      }
      timeout *= 2;
    }
    throw lastError ?? new DnsError('TIMEOUT', `${name} ${type}`, 'no server to ask');
  }

  async #askServer(server: NameServer, name: string, type: QueryType, timeout: number, signal: AbortSignal | undefined): Promise<{ response: Response; transport: 'udp' | 'tcp' }> {
    const key = endpointKey(server);
    for (;;) {
      const edns = !this.#noEdns.has(key);
      // A fresh crypto-random ID per try (RFC 5452), on a fresh socket with a fresh source port.
      const exchange = { server, query: { id: randomInt(0, 0x10000), name, type, edns }, timeout, clock: this.#clock, signal };
      let response = await exchangeUdp(exchange);
      let transport: 'udp' | 'tcp' = 'udp';
      if (response.truncated) {
        // A truncated answer is incomplete (dnsmasq sends 30 of 60 records): never use it.
        response = await exchangeTcp({ ...exchange, query: { ...exchange.query, id: randomInt(0, 0x10000) } });
        transport = 'tcp';
      }
      if (edns && (response.rcode === RCODE.FORMERR || response.rcode === RCODE.NOTIMP)) {
        this.#noEdns.add(key);
        continue;
      }
      return { response, transport };
    }
  }
}

function positive(name: string, type: QueryType, records: WireRecord[], response: Response, chainTtl: number, transport: 'udp' | 'tcp'): DnsAnswer {
  let ttl = Math.min(chainTtl, ...records.map((r) => r.ttl));
  const addresses: string[] = [];
  const srv: SrvData[] = [];
  const glue = new Map<string, string[]>();
  for (const r of records) {
    if (r.type === 'SRV') srv.push(r.data);
    else if ((r.type === 'A' || r.type === 'AAAA') && !addresses.includes(r.data)) addresses.push(r.data);
  }
  if (type === 'SRV') {
    const targets = new Set(srv.map((s) => canonical(s.target)));
    // Glue counts only when its owner is one of our targets: anything else in the section is ignored.
    for (const r of response.additionals) {
      if ((r.type !== 'A' && r.type !== 'AAAA') || !targets.has(canonical(r.name))) continue;
      const list = glue.get(canonical(r.name)) ?? [];
      if (!list.includes(r.data)) list.push(r.data);
      glue.set(canonical(r.name), list);
      ttl = Math.min(ttl, r.ttl);
    }
  }
  return { name, type, kind: 'records', addresses, srv, glue, ttl, transport };
}

function rcodeReason(rcode: number): DnsErrorReason {
  switch (rcode) {
    case RCODE.SERVFAIL:
      return 'SERVFAIL';
    case RCODE.REFUSED:
      return 'REFUSED';
    case RCODE.FORMERR:
      return 'FORMERR';
    case RCODE.NOTIMP:
      return 'NOTIMP';
    default:
      return 'RCODE';
  }
}
